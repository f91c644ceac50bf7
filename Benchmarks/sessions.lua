-- wrk script: the requests of N distinct signed-in users, one per request in turn.
-- Set SESSIONS_FILE (lines `cookie_name=value`, from session-mint) before loading this file:
--   wrk -s <wrapper that sets SESSIONS_FILE and dofile()s this> URL
-- Every request also carries a spoofed X-Auth-User-Id, as the single-session auth case does,
-- so the proxy must strip it. All requests are formatted once, in init, so the per-request
-- cost on wrk's side is a table index. (No response() callback: wrk counts non-2xx itself.)
local requests, count, next_index = {}, 0, 0

function init(args)
  for line in io.lines(SESSIONS_FILE) do
    count = count + 1
    requests[count] = wrk.format("GET", "/", { ["Cookie"] = line, ["X-Auth-User-Id"] = "evil" })
  end
  if count == 0 then error("no sessions in " .. SESSIONS_FILE) end
end

-- PACE_MS (optional): each connection waits a random time with that mean (exponentially
-- distributed, whole ms as wrk's timers take) after a response before its next request, so
-- the offered load is fixed well below saturation (latency, not throughput). A fixed wait
-- would phase-lock the connections: all of them would send within the same millisecond every
-- PACE_MS, and the p99 would measure queueing in that burst (connections × cost per request)
-- rather than what a proxy adds. Random waits make the arrivals close to Poisson. LuaJIT's
-- math.random is unseeded here, so every server is sent the same sequence of waits.
if PACE_MS then
  function delay()
    return math.floor(-PACE_MS * math.log(1 - math.random()))
  end
end

function request()
  next_index = next_index % count + 1
  return requests[next_index]
end
