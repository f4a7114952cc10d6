package resolve

import (
	"sync"
	"time"
)

// SSM parameter lifetimes, as Karpenter keeps them: the public parameters behind AMI aliases change when a new EKS
// AMI is released, so a process reads each at most once a day, which spreads a release over clusters; a parameter
// named by an amiSelectorTerm (ssmParameter) is the user's own and is read again after 5 minutes.
const (
	AliasParameterTTL  = 24 * time.Hour
	CustomParameterTTL = 5 * time.Minute
)

// paramEntry is one remembered SSM parameter value.
type paramEntry struct {
	value   string
	expires time.Time
	// latest marks an alias parameter of version "latest": its value changes with each AMI release, and it is
	// read again before its expiry once the AMI it names is deprecated.
	latest bool
}

// paramCache remembers SSM parameter values by name until they expire. Failed reads are not remembered. It is
// safe for concurrent use.
type paramCache struct {
	mu      sync.Mutex
	entries map[string]paramEntry
}

func newParamCache() *paramCache { return &paramCache{entries: map[string]paramEntry{}} }

// get returns the value of name if it is remembered and not expired at now.
func (c *paramCache) get(name string, now time.Time) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[name]
	if !ok {
		return "", false
	}
	if !now.Before(e.expires) {
		delete(c.entries, name)
		return "", false
	}
	return e.value, true
}

func (c *paramCache) set(name string, e paramEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.entries[name] = e
}

// forgetLatest drops the "latest" alias parameters whose value is one of the image IDs (deprecated AMIs), so the
// next resolution reads them again; it returns how many it dropped.
func (c *paramCache) forgetLatest(imageIDs map[string]bool) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for name, e := range c.entries {
		if e.latest && imageIDs[e.value] {
			delete(c.entries, name)
			n++
		}
	}
	return n
}
