package sdk

import (
	"bytes"
	"fmt"
	"io"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
)

// NewHTTPClient wraps base (the SDK's default client when nil) so that net/http never reads a request body the
// SDK may close under it.
//
// smithy-go closes a request's body as soon as the response headers arrive. net/http's write loop, after copying
// Content-Length bytes, reads the body once more to check for trailing data; if the body was closed in between,
// that read fails with io.EOF, the write loop reports a write error and closes the connection, and reading the
// response body (which the server has already sent in full) fails with "use of closed network connection". The
// window is between the write loop's socket write and its trailing read: a request body too large for the 4 KiB
// write buffer (a launch template with user data) goes straight to the socket, and a fast server (the
// simulator, on loopback) answers before a descheduled write loop resumes. On a busy machine it happens every
// few hundred calls. The connection it kills may already serve the next request of another caller.
//
// The wrapper hands net/http its own in-memory copy of the body, which nothing closes early. Request bodies of
// the APIs the provider calls are small (the largest is a launch template's user data).
func NewHTTPClient(base aws.HTTPClient) aws.HTTPClient {
	if c, ok := base.(*detachedBodyClient); ok {
		return c
	}
	if base == nil {
		base = awshttp.NewBuildableClient()
	}
	return &detachedBodyClient{next: base}
}

type detachedBodyClient struct{ next aws.HTTPClient }

func (c *detachedBodyClient) Do(req *http.Request) (*http.Response, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return c.next.Do(req)
	}
	body, err := io.ReadAll(req.Body)
	if err != nil {
		return nil, fmt.Errorf("buffering the request body: %w", err)
	}
	// The SDK closes its own body after Do returns; net/http gets a copy it alone owns.
	detached := req.Clone(req.Context())
	detached.Body = io.NopCloser(bytes.NewReader(body))
	detached.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	detached.ContentLength = int64(len(body))
	return c.next.Do(detached)
}
