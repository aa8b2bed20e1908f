-- wrk script: an indexed range query on /items with random bounds on every request, as the
-- index benchmark's range.first100 query: orderBy="score" startAt=x endAt=x+span limitToFirst=100
-- (or limitToLast). Arguments after `--`: span (default 10000), limitToFirst|limitToLast.
-- Reports non-2xx answers (a 400 "Index not defined" or a 503 "still building" would otherwise
-- look like fast queries) and p50/p99 latency.
local span = 10000
local limit = "limitToFirst"
local threads = 0

function setup(thread)
  threads = threads + 1
  thread:set("seed", threads)
end

function init(args)
  span = tonumber(args[1] or "10000")
  limit = args[2] or "limitToFirst"
  math.randomseed(seed * 7919 + 13)
end

function request()
  local x = math.random(0, 1000000 - span - 1)
  local path = string.format('/items.json?orderBy=%%22score%%22&startAt=%d&endAt=%d&%s=100', x, x + span, limit)
  return wrk.format("GET", path)
end

function done(summary, latency, requests)
  io.write(string.format("non-2xx responses: %d\n", summary.errors.status))
  io.write(string.format("latency p50 %.0f us, p99 %.0f us\n", latency:percentile(50), latency:percentile(99)))
end
