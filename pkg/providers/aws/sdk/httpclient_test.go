package sdk

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// closingBody behaves like smithy-go's safe reader: once closed, reads return io.EOF.
type closingBody struct {
	mu     sync.Mutex
	r      io.Reader
	closed bool
}

func (b *closingBody) Read(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return 0, io.EOF
	}
	return b.r.Read(p)
}

func (b *closingBody) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	return nil
}

// recordingClient keeps the request net/http would be given, to read its body after the caller closed its own.
type recordingClient struct{ got *http.Request }

func (c *recordingClient) Do(req *http.Request) (*http.Response, error) {
	c.got = req
	return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody}, nil
}

func TestNewHTTPClientDetachesTheBody(t *testing.T) {
	const payload = "Action=CreateLaunchTemplate&Version=2016-11-15"
	body := &closingBody{r: strings.NewReader(payload)}
	req, err := http.NewRequest(http.MethodPost, "http://127.0.0.1:1/", body)
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = int64(len(payload))
	rec := &recordingClient{}
	if _, err := NewHTTPClient(rec).Do(req); err != nil {
		t.Fatalf("Do: %v", err)
	}
	// The SDK closes its body as soon as Do returns; the transport may still be reading its copy.
	if err := body.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(rec.got.Body)
	if err != nil || string(got) != payload {
		t.Fatalf("transport read %q, %v after the caller closed its body; want %q", got, err, payload)
	}
	// net/http's trailing read after Content-Length bytes must see a clean EOF, not an error.
	if n, err := rec.got.Body.Read(make([]byte, 1)); n != 0 || !errors.Is(err, io.EOF) {
		t.Errorf("trailing read = %d, %v; want 0, EOF", n, err)
	}
	if rec.got.ContentLength != int64(len(payload)) || rec.got.GetBody == nil {
		t.Errorf("ContentLength %d, GetBody set %v", rec.got.ContentLength, rec.got.GetBody != nil)
	}
	once := NewHTTPClient(rec)
	if twice := NewHTTPClient(once); twice != once {
		t.Errorf("wrapping twice nests the wrapper")
	}
}
