package hooks

import (
	"bytes"
	"container/list"
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/wink-mcp/wink-mcp/session"
	"github.com/wink-mcp/wink-mcp/tools"
)

// CacheConfig configures the per-session result cache, which only ever
// holds results of tools annotated read-only and idempotent.
type CacheConfig struct {
	Enabled bool `json:"enabled" jsonschema:"Whether results of every read-only, idempotent tool are cached."`
	// MaxEntries is 256 when 0.
	MaxEntries int           `json:"max_entries" jsonschema:"The most results a session's cache holds; the least recently used go first." schema:"minimum=1"`
	TTL        time.Duration `json:"ttl" jsonschema:"How long a result is served; 0s means until a state-changing call of the session."`
}

// ToolCacheConfig turns the cache on or off for one tool.
type ToolCacheConfig struct {
	Enabled *bool `json:"enabled" jsonschema:"Whether this tool's results are cached."`
}

// Cache returns the cache stage. For a tool annotated read-only and
// idempotent whose cache is on, a successful result is kept in the
// session's cache, keyed by the tool and its arguments (as JSON with sorted
// keys), and a later call with the same arguments is answered from it
// without running the tool (the outcome is marked Cached, and so is its
// ToolInvoked event). Any successful call of a tool that is not read-only
// empties the session's cache. A dry run passes by. Nil when no tool's
// cache is on.
func (h *Hooks) Cache() tools.Middleware {
	if !h.cache {
		return nil
	}
	return func(next tools.Handler) tools.Handler {
		return func(ctx context.Context, call *tools.Call) *tools.Outcome {
			if call.DryRun {
				return next(ctx, call) // its result is not the tool's
			}
			if !h.plan(call.Tool).cacheable {
				out := next(ctx, call)
				if out.Success && !call.Tool.Annotations().ReadOnly {
					if c, ok := session.Resource(call.Session, cacheKey); ok {
						c.invalidate()
					}
				}
				return out
			}
			key, ok := cacheEntryKey(call)
			if !ok {
				return next(ctx, call)
			}
			c := session.Attach(call.Session, cacheKey, func() *resultCache { return newResultCache(h.cfg.Cache.MaxEntries) })
			now := h.now()
			if out, ok := c.get(key, now, h.cfg.Cache.TTL); ok {
				out.Cached, out.Retries = true, 0
				return out
			}
			gen := c.generation()
			out := next(ctx, call)
			if out.Success {
				c.put(key, gen, out, now)
			}
			return out
		}
	}
}

var cacheKey = session.NewResourceKey[*resultCache]("hooks.cache")

// cacheEntryKey returns the tool's name and its arguments as canonical
// JSON, or false when the arguments are not JSON (validation will say so).
func cacheEntryKey(call *tools.Call) (string, bool) {
	args := bytes.TrimSpace(call.Args)
	if len(args) == 0 || string(args) == "null" {
		args = []byte("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		return "", false
	}
	b, err := json.Marshal(v) // map keys come out sorted
	if err != nil {
		return "", false
	}
	return call.Tool.Name() + "\x00" + string(b), true
}

// resultCache is one session's cache: a bounded LRU of outcomes, and a
// generation that every invalidation advances, so that a result computed
// before an invalidation is never stored after it.
type resultCache struct {
	mu      sync.Mutex
	max     int
	gen     uint64
	order   *list.List // of *cacheEntry, most recent first
	entries map[string]*list.Element
}

type cacheEntry struct {
	key    string
	out    *tools.Outcome
	stored time.Time
}

func newResultCache(max int) *resultCache {
	return &resultCache{max: max, order: list.New(), entries: map[string]*list.Element{}}
}

// get returns a copy of the outcome stored under key, unless older than
// ttl (when ttl > 0).
func (c *resultCache) get(key string, now time.Time, ttl time.Duration) (*tools.Outcome, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.entries[key]
	if !ok {
		return nil, false
	}
	e := el.Value.(*cacheEntry)
	if ttl > 0 && now.Sub(e.stored) >= ttl {
		c.order.Remove(el)
		delete(c.entries, key)
		return nil, false
	}
	c.order.MoveToFront(el)
	return e.out.Clone(), true
}

func (c *resultCache) generation() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gen
}

// put stores a copy of out under key, unless the cache was invalidated
// since generation gen was read.
func (c *resultCache) put(key string, gen uint64, out *tools.Outcome, now time.Time) {
	stored := out.Clone()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen {
		return
	}
	if el, ok := c.entries[key]; ok {
		el.Value = &cacheEntry{key, stored, now}
		c.order.MoveToFront(el)
		return
	}
	c.entries[key] = c.order.PushFront(&cacheEntry{key, stored, now})
	for c.order.Len() > c.max {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.entries, last.Value.(*cacheEntry).key)
	}
}

// invalidate empties the cache.
func (c *resultCache) invalidate() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	if c.order.Len() > 0 {
		c.order.Init()
		clear(c.entries)
	}
}

// len returns the number of entries.
func (c *resultCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}
