package redis

import goredis "github.com/redis/go-redis/v9"

// addGroupsScript XADDs each group whose id is not yet in the written set.
// KEYS[1] groups stream, KEYS[2] written set.
// ARGV: repeated (group_id, policy_version, schema, payload).
// Returns one entry id per group, "" for a group already written.
var addGroupsScript = goredis.NewScript(`
local out = {}
for i = 1, #ARGV, 4 do
  if redis.call('SADD', KEYS[2], ARGV[i]) == 1 then
    out[#out + 1] = redis.call('XADD', KEYS[1], '*',
      'group_id', ARGV[i], 'policy_version', ARGV[i + 1], 'schema', ARGV[i + 2], 'group', ARGV[i + 3])
  else
    out[#out + 1] = ''
  end
end
return out
`)

// commitScript writes the outputs of consumed entries, marks each done and
// acknowledges it, all in one atomic script.
// KEYS[1] source stream, KEYS[2] done set, KEYS[3] output stream.
// ARGV[1] consumer group; then per item: source id, done member, number of
// output entries, and per entry: number of fields, then name, value pairs.
// An item whose member was already in the done set writes nothing (it is a
// redelivery of work already committed) but is still acknowledged.
// Returns one 1 (written) or 0 (duplicate) per item.
var commitScript = goredis.NewScript(`
local group = ARGV[1]
local out = {}
local i = 2
while i <= #ARGV do
  local id, member, nentries = ARGV[i], ARGV[i + 1], tonumber(ARGV[i + 2])
  i = i + 3
  local fresh = redis.call('SADD', KEYS[2], member) == 1
  for e = 1, nentries do
    local nf = tonumber(ARGV[i])
    i = i + 1
    if fresh then
      redis.call('XADD', KEYS[3], '*', unpack(ARGV, i, i + 2 * nf - 1))
    end
    i = i + 2 * nf
  end
  redis.call('XACK', KEYS[1], group, id)
  out[#out + 1] = fresh and 1 or 0
end
return out
`)

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
