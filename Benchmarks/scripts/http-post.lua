-- wrk script: POST (push) a small JSON object to /bench.json on every request.
-- Reports the answers with a status of 400 or more (wrk's own count, `summary.errors.status`;
-- eddyd answers a push 200 or with an error) so a run with errors is visible, not silently fast.
-- No `response` function on purpose: with one, wrk parses every answer's headers and body into
-- Lua, CPU it takes from the server on a 2-core machine (about 9% fewer POSTs/s measured; see
-- Benchmarks/README.md, "The HTTP driver's answer callback").
wrk.method = "POST"
wrk.path = "/bench.json"
wrk.body = '{"name":"bench","n":1,"ok":true}'
wrk.headers["Content-Type"] = "application/json"

function done(summary, latency, requests)
  io.write(string.format("non-200 responses: %d\n", summary.errors.status))
  io.write(string.format("latency p50 %.0f us, p99 %.0f us\n", latency:percentile(50), latency:percentile(99)))
end
