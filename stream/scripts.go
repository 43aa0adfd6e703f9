package stream

import goredis "github.com/redis/go-redis/v9"

// deadLetterScript moves entries to the dead-letter stream and acknowledges
// them atomically.
// KEYS[1] source stream, KEYS[2] dead-letter stream. ARGV[1] consumer group;
// then per entry: source id, number of fields, name, value pairs.
var deadLetterScript = goredis.NewScript(`
local i = 2
while i <= #ARGV do
  local id, nf = ARGV[i], tonumber(ARGV[i + 1])
  i = i + 2
  redis.call('XADD', KEYS[2], '*', unpack(ARGV, i, i + 2 * nf - 1))
  i = i + 2 * nf
  redis.call('XACK', KEYS[1], ARGV[1], id)
end
return 1
`)

// pruneConsumersScript deletes the group's consumers that have nothing
// pending and have been idle at least ARGV[2] ms. Checking and deleting in
// one script means no consumer can read an entry in between (deleting a
// consumer drops its pending list, so a consumer with pending entries is
// never deleted).
// KEYS[1] stream. ARGV[1] consumer group, ARGV[2] min idle in ms.
// Returns the number of consumers deleted.
var pruneConsumersScript = goredis.NewScript(`
local removed = 0
for _, c in ipairs(redis.call('XINFO', 'CONSUMERS', KEYS[1], ARGV[1])) do
  local name, pending, idle
  for i = 1, #c, 2 do
    if c[i] == 'name' then name = c[i + 1]
    elseif c[i] == 'pending' then pending = c[i + 1]
    elseif c[i] == 'idle' then idle = c[i + 1] end
  end
  if name and pending == 0 and idle and idle >= tonumber(ARGV[2]) then
    redis.call('XGROUP', 'DELCONSUMER', KEYS[1], ARGV[1], name)
    removed = removed + 1
  end
end
return removed
`)
