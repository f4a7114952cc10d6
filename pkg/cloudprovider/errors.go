package cloudprovider

import (
	"errors"
	"fmt"
)

// InsufficientCapacityError says the cloud could not launch any of the requested offerings now.
type InsufficientCapacityError struct{ Err error }

func (e *InsufficientCapacityError) Error() string {
	return fmt.Sprintf("insufficient capacity: %v", e.Err)
}
func (e *InsufficientCapacityError) Unwrap() error { return e.Err }

// NewInsufficientCapacityError wraps err as an InsufficientCapacityError.
func NewInsufficientCapacityError(err error) error { return &InsufficientCapacityError{Err: err} }

// IsInsufficientCapacity reports whether err is or wraps an InsufficientCapacityError.
func IsInsufficientCapacity(err error) bool {
	var e *InsufficientCapacityError
	return errors.As(err, &e)
}

// NotFoundError says the instance (or other cloud object) does not exist, or no longer does.
type NotFoundError struct{ Err error }

func (e *NotFoundError) Error() string { return fmt.Sprintf("not found: %v", e.Err) }
func (e *NotFoundError) Unwrap() error { return e.Err }

// NewNotFoundError wraps err as a NotFoundError.
func NewNotFoundError(err error) error { return &NotFoundError{Err: err} }

// IsNotFound reports whether err is or wraps a NotFoundError.
func IsNotFound(err error) bool {
	var e *NotFoundError
	return errors.As(err, &e)
}

// ThrottledError says the cloud asked us to slow down; the caller should retry later.
type ThrottledError struct{ Err error }

func (e *ThrottledError) Error() string { return fmt.Sprintf("throttled: %v", e.Err) }
func (e *ThrottledError) Unwrap() error { return e.Err }

// NewThrottledError wraps err as a ThrottledError.
func NewThrottledError(err error) error { return &ThrottledError{Err: err} }

// IsThrottled reports whether err is or wraps a ThrottledError.
func IsThrottled(err error) bool {
	var e *ThrottledError
	return errors.As(err, &e)
}

// NodeClassNotReadyError says the NodeClaim's node class cannot be used yet (unresolved subnets, AMIs, ...).
type NodeClassNotReadyError struct{ Err error }

func (e *NodeClassNotReadyError) Error() string {
	return fmt.Sprintf("node class not ready: %v", e.Err)
}
func (e *NodeClassNotReadyError) Unwrap() error { return e.Err }

// NewNodeClassNotReadyError wraps err as a NodeClassNotReadyError.
func NewNodeClassNotReadyError(err error) error { return &NodeClassNotReadyError{Err: err} }

// IsNodeClassNotReady reports whether err is or wraps a NodeClassNotReadyError.
func IsNodeClassNotReady(err error) bool {
	var e *NodeClassNotReadyError
	return errors.As(err, &e)
}
