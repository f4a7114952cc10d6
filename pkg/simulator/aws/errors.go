package awssim

import (
	"fmt"
	"net/http"
)

// apiError is an AWS-shaped error returned by a simulated call.
type apiError struct {
	Status  int
	Code    string
	Message string
	// QueryCode is the legacy awsquery code SQS puts in the x-amzn-query-error header.
	QueryCode string
	// Sender is true for client faults.
	Sender bool
}

func (e *apiError) Error() string { return fmt.Sprintf("%s: %s", e.Code, e.Message) }

// errDryRun answers an EC2 call made with DryRun=true that the caller is allowed to make: HTTP 412, as EC2 does.
func errDryRun() *apiError {
	return &apiError{Status: http.StatusPreconditionFailed, Code: "DryRunOperation",
		Message: "Request would have succeeded, but DryRun flag is set.", Sender: true}
}

func errBadRequest(code, format string, args ...any) *apiError {
	return &apiError{Status: http.StatusBadRequest, Code: code, Message: fmt.Sprintf(format, args...), Sender: true}
}

func errNotFound(code, format string, args ...any) *apiError {
	return &apiError{Status: http.StatusNotFound, Code: code, Message: fmt.Sprintf(format, args...), Sender: true}
}

func errConflict(code, format string, args ...any) *apiError {
	return &apiError{Status: http.StatusConflict, Code: code, Message: fmt.Sprintf(format, args...), Sender: true}
}

func errInvalidParam(format string, args ...any) *apiError {
	return errBadRequest("InvalidParameterValue", format, args...)
}

func errMissingParam(name string) *apiError {
	return errBadRequest("MissingParameter", "The request must contain the parameter %s", name)
}
