-- wrk script (scripts/peers/glewlwyd.sh bench-refresh): the refresh_token grant against Glewlwyd's OIDC plugin
-- (/api/oidc/token) with one-use (rotating) refresh tokens.
--
-- Tokens: one per line in $TOKENS_FILE. Line i (0-based) goes to thread
-- (i mod $THREADS); set THREADS to wrk's -t value (default 2). The sets are disjoint whatever THREADS is,
-- so no token is shared by two threads; a thread with id >= THREADS finds no token and stops wrk.
-- Each thread keeps a FIFO pool of currently-valid refresh tokens: request() takes one
-- from the head, response() puts the new refresh_token from the JSON body at the tail. wrk calls
-- request() for a connection only after that connection's previous response was handled, so with
-- c connections per thread at most c tokens are in flight and a pool of c tokens never runs dry
-- (no token is ever sent twice, which Glewlwyd would treat as a replay and revoke the chain).
-- wrk also calls request() once on thread 0 before the run (to verify the request) without sending it,
-- so give each thread (connections/threads + 1) tokens: glewlwyd.sh makes C + T tokens.
--
-- Counts as bad: status ~= 200, or a 200 body without a refresh_token, or request() finding no token.
-- done() prints a line "RESULT requests=<n> bad=<n> starved=<n> ..." for glewlwyd.sh.

local client_id = os.getenv("CLIENT_ID") or "bench"
local tokens_file = assert(os.getenv("TOKENS_FILE"), "TOKENS_FILE is not set")

local nthreads = tonumber(os.getenv("THREADS") or "2")
local threads = {}

function setup(thread)
   thread:set("tid", #threads)
   table.insert(threads, thread)
end

-- per-thread state (each thread has its own Lua state)
local pool, head, tail = {}, 1, 0
bad, starved, ok, first_error = 0, 0, 0, ""

function init(args)
   wrk.method = "POST"
   wrk.path = "/api/oidc/token"
   wrk.headers["Content-Type"] = "application/x-www-form-urlencoded"
   local f = assert(io.open(tokens_file, "r"), "cannot open " .. tokens_file)
   local i = 0
   for line in f:lines() do
      if line:match("^[A-Za-z0-9]+$") then
         if i % nthreads == tid then tail = tail + 1; pool[tail] = line end
         i = i + 1
      end
   end
   f:close()
   if tail == 0 then error("thread " .. tid .. ": no tokens (THREADS=" .. nthreads .. "; need >= connections/threads + 1 per thread) in " .. tokens_file) end
end

function request()
   local tok = ""
   if head <= tail then
      tok = pool[head]; pool[head] = nil; head = head + 1
   else
      starved = starved + 1
   end
   return wrk.format(nil, nil, nil,
      "grant_type=refresh_token&client_id=" .. client_id .. "&refresh_token=" .. tok)
end

function response(status, headers, body)
   local new = nil
   if status == 200 then new = body:match('"refresh_token"%s*:%s*"([A-Za-z0-9]+)"') end
   if new then
      ok = ok + 1
      tail = tail + 1; pool[tail] = new
   else
      bad = bad + 1
      if first_error == "" then first_error = status .. " " .. (body or ""):sub(1, 200) end
   end
end

function done(summary, latency, requests)
   local b, s, o, fe = 0, 0, 0, ""
   for _, t in ipairs(threads) do
      b = b + (t:get("bad") or 0)
      s = s + (t:get("starved") or 0)
      o = o + (t:get("ok") or 0)
      local e = t:get("first_error")
      if fe == "" and e and e ~= "" then fe = e end
   end
   io.write(string.format("RESULT requests=%d ok=%d bad=%d starved=%d duration_us=%d socket_errors=%d\n",
      summary.requests, o, b, s, summary.duration,
      summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout))
   if fe ~= "" then io.write("first bad response: " .. fe .. "\n") end
end
