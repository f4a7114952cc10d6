package devices

import (
	"sync"

	"github.com/dovetail/dovetail/pkg/catalog"
)

// Source makes Models from the catalog and the built-in models' switches, with whatever overrides document the
// operator holds at the moment. It parses a document once per version. It is safe for concurrent use.
type Source struct {
	cat       *catalog.Catalog
	nvidia    bool
	efa       bool
	mu        sync.Mutex
	version   string
	models    *Models
	err       error
	hasParsed bool
}

// NewSource returns a source over the catalog with the NVIDIA GPU and EFA models switched as given.
func NewSource(cat *catalog.Catalog, nvidiaGPU, efa bool) *Source {
	return &Source{cat: cat, nvidia: nvidiaGPU, efa: efa}
}

// Models returns the models with the overrides document data (nil or empty: none); version identifies the document
// (a ConfigMap's resourceVersion, empty when there is none). A document that does not validate gives its error.
func (s *Source) Models(version string, data []byte) (*Models, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.hasParsed && version == s.version {
		return s.models, s.err
	}
	var o *Overrides
	var err error
	if len(data) > 0 {
		o, err = ParseOverrides(data)
	}
	var m *Models
	if err == nil {
		m, err = New(s.cat, Options{NVIDIAGPU: s.nvidia, EFA: s.efa, Overrides: o})
	}
	s.version, s.models, s.err, s.hasParsed = version, m, err, true
	return m, err
}
