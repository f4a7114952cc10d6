package sdk

import (
	"context"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// Middleware IDs ObserveCalls adds.
const (
	callObserverID    = "DovetailCallObserver"
	attemptObserverID = "DovetailAttemptObserver"
)

// NoResponse is the status code of an attempt that got no HTTP response (a connection error, a cancelled context).
const NoResponse = -1

// Call is one AWS operation as the caller saw it, retries included.
type Call struct {
	// Service is the SDK's service ID (EC2, SSM, IAM, Pricing, EKS, SQS) and Operation the API action.
	Service   string
	Operation string
	// Code is the HTTP status code of the last attempt (NoResponse without one).
	Code int
	// Duration is from the call to its return, retry waits included.
	Duration time.Duration
	// Attempts are the HTTP requests the call made, in order; len(Attempts)-1 are retries.
	Attempts []Attempt
}

// Attempt is one HTTP request of a call.
type Attempt struct {
	// Code is the HTTP status code of the answer (NoResponse without one).
	Code int
	// Duration is from signing the request to the response being read.
	Duration time.Duration
}

// callRecord collects a call's attempts; the retry loop runs them one after another, but a call cancelled mid
// attempt may return before its attempt does, so it is guarded.
type callRecord struct {
	mu                 sync.Mutex
	service, operation string
	attempts           []Attempt
}

type callRecordKey struct{}

// ObserveCalls makes every client built from cfg call observe once each operation returns, with its service,
// operation, status and attempts. Its outer middleware runs after the client registered the service metadata
// (the initialize step, outside the retry loop); the inner one runs once per attempt, inside the retry loop of
// the finalize step. A nil observe leaves cfg alone.
func ObserveCalls(cfg *aws.Config, observe func(Call)) {
	if observe == nil {
		return
	}
	opts := make([]func(*middleware.Stack) error, 0, len(cfg.APIOptions)+1)
	opts = append(opts, cfg.APIOptions...)
	cfg.APIOptions = append(opts, func(stack *middleware.Stack) error {
		if err := stack.Initialize.Add(middleware.InitializeMiddlewareFunc(callObserverID,
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (
				middleware.InitializeOutput, middleware.Metadata, error,
			) {
				rec := &callRecord{service: awsmiddleware.GetServiceID(ctx), operation: awsmiddleware.GetOperationName(ctx)}
				start := time.Now()
				out, md, err := next.HandleInitialize(context.WithValue(ctx, callRecordKey{}, rec), in)
				observe(rec.call(time.Since(start)))
				return out, md, err
			}), middleware.After); err != nil {
			return err
		}
		attempt := middleware.FinalizeMiddlewareFunc(attemptObserverID,
			func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (
				middleware.FinalizeOutput, middleware.Metadata, error,
			) {
				start := time.Now()
				out, md, err := next.HandleFinalize(ctx, in)
				if rec, ok := ctx.Value(callRecordKey{}).(*callRecord); ok {
					code := NoResponse
					if res, ok := awsmiddleware.GetRawResponse(md).(*smithyhttp.Response); ok && res != nil && res.Response != nil && res.StatusCode != 0 {
						code = res.StatusCode
					}
					rec.add(Attempt{Code: code, Duration: time.Since(start)})
				}
				return out, md, err
			})
		// Inside the retry loop, each attempt passes here once; a stack without a retryer gets it at the end.
		if _, ok := stack.Finalize.Get("Retry"); ok {
			return stack.Finalize.Insert(attempt, "Retry", middleware.After)
		}
		return stack.Finalize.Add(attempt, middleware.After)
	})
}

func (r *callRecord) add(a Attempt) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.attempts = append(r.attempts, a)
}

func (r *callRecord) call(d time.Duration) Call {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := Call{Service: r.service, Operation: r.operation, Code: NoResponse, Duration: d, Attempts: append([]Attempt(nil), r.attempts...)}
	if n := len(r.attempts); n > 0 {
		c.Code = r.attempts[n-1].Code
	}
	return c
}
