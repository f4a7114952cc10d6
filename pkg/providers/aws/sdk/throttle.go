package sdk

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/smithy-go/middleware"
)

// throttleCounterID names the middleware CountThrottles adds.
const throttleCounterID = "DovetailThrottleCounter"

// CountThrottles makes every client built from cfg call count with the service and operation each time AWS
// answers an attempt with a throttling error. It counts attempts, not operations: the SDK's retryer (standard
// mode: up to 3 attempts, exponential backoff with jitter) retries a throttled call before the caller sees it.
// A nil count leaves cfg alone.
func CountThrottles(cfg *aws.Config, count func(service, operation string)) {
	if count == nil {
		return
	}
	opts := make([]func(*middleware.Stack) error, 0, len(cfg.APIOptions)+1)
	opts = append(opts, cfg.APIOptions...)
	cfg.APIOptions = append(opts, func(stack *middleware.Stack) error {
		// The deserialize step runs once per attempt, inside the retry loop of the finalize step; added first,
		// this middleware sees the error the operation's deserializer made of the response.
		return stack.Deserialize.Add(middleware.DeserializeMiddlewareFunc(throttleCounterID,
			func(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (
				middleware.DeserializeOutput, middleware.Metadata, error,
			) {
				out, md, err := next.HandleDeserialize(ctx, in)
				if err != nil && IsThrottled(err) {
					count(awsmiddleware.GetServiceID(ctx), awsmiddleware.GetOperationName(ctx))
				}
				return out, md, err
			}), middleware.Before)
	})
}
