-- wrk script: one request shape from the environment, with a bearer token when EDDY_BEARER is
-- set: EDDY_METHOD (GET or POST), EDDY_PATH (with its query string), EDDY_BODY (POST).
-- Counts non-200 answers so a run with denials is visible, not silently fast.
wrk.method = os.getenv("EDDY_METHOD") or "GET"
wrk.path = os.getenv("EDDY_PATH") or "/.json"
local body = os.getenv("EDDY_BODY")
if body then wrk.body = body end
wrk.headers["Content-Type"] = "application/json"
local bearer = os.getenv("EDDY_BEARER")
if bearer and bearer ~= "" then wrk.headers["Authorization"] = "Bearer " .. bearer end

function done(summary, latency, requests)
  io.write(string.format("non-200 responses: %d\n", summary.errors.status))
  io.write(string.format("latency p50 %.0f us, p99 %.0f us\n", latency:percentile(50), latency:percentile(99)))
end
