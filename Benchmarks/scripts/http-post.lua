-- wrk script: POST (push) a small JSON object to /bench.json on every request.
-- Counts non-200 answers so a run with errors is visible, not silently fast.
wrk.method = "POST"
wrk.path = "/bench.json"
wrk.body = '{"name":"bench","n":1,"ok":true}'
wrk.headers["Content-Type"] = "application/json"

local failures = 0
function response(status, headers, body)
  if status ~= 200 then failures = failures + 1 end
end

function done(summary, latency, requests)
  io.write(string.format("non-200 responses: %d\n", summary.errors.status))
  io.write(string.format("latency p50 %.0f us, p99 %.0f us\n", latency:percentile(50), latency:percentile(99)))
end
