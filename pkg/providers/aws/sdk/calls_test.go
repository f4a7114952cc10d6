package sdk

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/google/go-cmp/cmp"
)

// zeroBackoff retries at once.
type zeroBackoff struct{}

func (zeroBackoff) BackoffDelay(int, error) (time.Duration, error) { return 0, nil }

func TestObserveCalls(t *testing.T) {
	const okBody = `<DescribeAvailabilityZonesResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/"><requestId>r</requestId><availabilityZoneInfo/></DescribeAvailabilityZonesResponse>`
	const errBody = `<Response><Errors><Error><Code>InternalError</Code><Message>try again</Message></Error></Errors><RequestID>r</RequestID></Response>`
	tests := []struct {
		name string
		// codes are the answers the server gives, one a request, in order.
		codes    []int
		wantCode int
		wantErr  bool
	}{
		{name: "first attempt succeeds", codes: []int{200}, wantCode: 200},
		{name: "retried after a server error", codes: []int{500, 200}, wantCode: 200},
		{name: "every attempt fails", codes: []int{500, 503, 500}, wantCode: 500, wantErr: true},
		{name: "client error is not retried", codes: []int{400}, wantCode: 400, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			n := 0
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				code := tt.codes[min(n, len(tt.codes)-1)]
				n++
				mu.Unlock()
				w.Header().Set("Content-Type", "text/xml")
				w.WriteHeader(code)
				if code == 200 {
					_, _ = w.Write([]byte(okBody))
				} else {
					_, _ = w.Write([]byte(errBody))
				}
			}))
			defer srv.Close()
			cfg := aws.Config{
				Region:      "us-west-2",
				Credentials: aws.AnonymousCredentials{},
				Retryer: func() aws.Retryer {
					return retry.NewStandard(func(o *retry.StandardOptions) { o.MaxAttempts = 3; o.Backoff = zeroBackoff{} })
				},
			}
			var calls []Call
			ObserveCalls(&cfg, func(c Call) { calls = append(calls, c) })
			client := ec2.NewFromConfig(cfg, func(o *ec2.Options) { o.BaseEndpoint = aws.String(srv.URL) })
			_, err := client.DescribeAvailabilityZones(context.Background(), &ec2.DescribeAvailabilityZonesInput{})
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want an error: %v", err, tt.wantErr)
			}
			if len(calls) != 1 {
				t.Fatalf("observed %d calls, want 1", len(calls))
			}
			c := calls[0]
			var codes []int
			for _, a := range c.Attempts {
				codes = append(codes, a.Code)
				if a.Duration <= 0 || a.Duration > c.Duration {
					t.Errorf("attempt duration %v, call duration %v", a.Duration, c.Duration)
				}
			}
			got := struct {
				Service, Operation string
				Code               int
				Codes              []int
			}{c.Service, c.Operation, c.Code, codes}
			want := struct {
				Service, Operation string
				Code               int
				Codes              []int
			}{"EC2", "DescribeAvailabilityZones", tt.wantCode, tt.codes}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("call (-want +got):\n%s", diff)
			}
		})
	}
}

func TestObserveCallsNoResponse(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens: every attempt fails to connect
	cfg := aws.Config{
		Region:      "us-west-2",
		Credentials: aws.AnonymousCredentials{},
		Retryer: func() aws.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) { o.MaxAttempts = 2; o.Backoff = zeroBackoff{} })
		},
	}
	var calls []Call
	ObserveCalls(&cfg, func(c Call) { calls = append(calls, c) })
	client := ec2.NewFromConfig(cfg, func(o *ec2.Options) { o.BaseEndpoint = aws.String(url) })
	if _, err := client.DescribeAvailabilityZones(context.Background(), &ec2.DescribeAvailabilityZonesInput{}); err == nil {
		t.Fatal("want an error from a closed endpoint")
	}
	if len(calls) != 1 || calls[0].Code != NoResponse || len(calls[0].Attempts) != 2 {
		t.Fatalf("calls = %+v, want one with code %d and two attempts", calls, NoResponse)
	}
}
