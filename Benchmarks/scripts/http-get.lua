-- wrk script: GET one 1 KiB child (/doc/item.json) and report p50/p99 latency.
wrk.method = "GET"
wrk.path = "/doc/item.json"

function done(summary, latency, requests)
  io.write(string.format("non-2xx responses: %d\n", summary.errors.status))
  io.write(string.format("latency p50 %.0f us, p99 %.0f us\n", latency:percentile(50), latency:percentile(99)))
end
