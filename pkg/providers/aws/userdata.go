package aws

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/dovetail/dovetail/pkg/providers/aws/launchtemplate"
)

// userDataMemoSize bounds the rendered user data kept; the memo starts over when full.
const userDataMemoSize = 64

// userDataMemo remembers user data rendered for a bootstrap, by a digest of the bootstrap's content. The
// NodeClaims of a scale-out mostly share their bootstraps, and rendering one (a YAML document built, parsed and
// merged with the node class's own) allocated ~300 KB: a third of what a launch allocated, held by each of the
// launches waiting in the launch window at once. Safe for concurrent use.
type userDataMemo struct {
	mu sync.Mutex
	m  map[[sha256.Size]byte]string
}

func newUserDataMemo() *userDataMemo {
	return &userDataMemo{m: map[[sha256.Size]byte]string{}}
}

// render returns b.Render(), from memory when a bootstrap of the same content was rendered before. Errors are
// not remembered.
func (u *userDataMemo) render(b launchtemplate.Bootstrap) (string, error) {
	content, err := json.Marshal(b)
	if err != nil {
		return "", fmt.Errorf("encoding the bootstrap: %w", err)
	}
	key := sha256.Sum256(content)
	u.mu.Lock()
	s, ok := u.m[key]
	u.mu.Unlock()
	if ok {
		return s, nil
	}
	s, err = b.Render()
	if err != nil {
		return "", err
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.m) >= userDataMemoSize {
		clear(u.m)
	}
	u.m[key] = s
	return s, nil
}
