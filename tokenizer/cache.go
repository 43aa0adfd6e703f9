package tokenizer

import (
	"hash/maphash"
	"sync"
)

// wordCache remembers the ids of short words, like the reference's BPE cache:
// bounded, and it stops admitting words once full rather than evicting. Safe
// for concurrent use; owned by one model.
type wordCache struct {
	seed   maphash.Seed
	shards [16]cacheShard
}

type cacheShard struct {
	mu    sync.RWMutex
	words map[string][]int32
}

const (
	cacheMaxWordLen   = 64
	cacheShardEntries = 4096 // 64 Ki words in all
)

func newWordCache() *wordCache {
	c := &wordCache{seed: maphash.MakeSeed()}
	for i := range c.shards {
		c.shards[i].words = make(map[string][]int32)
	}
	return c
}

func (c *wordCache) shard(word string) *cacheShard {
	return &c.shards[maphash.String(c.seed, word)&15]
}

func (c *wordCache) get(word string) ([]int32, bool) {
	if len(word) > cacheMaxWordLen {
		return nil, false
	}
	s := c.shard(word)
	s.mu.RLock()
	ids, ok := s.words[word]
	s.mu.RUnlock()
	return ids, ok
}

func (c *wordCache) put(word string, ids []int32) {
	if len(word) > cacheMaxWordLen {
		return
	}
	s := c.shard(word)
	s.mu.Lock()
	if len(s.words) < cacheShardEntries {
		s.words[word] = append([]int32(nil), ids...)
	}
	s.mu.Unlock()
}
