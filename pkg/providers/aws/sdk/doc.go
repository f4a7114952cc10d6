// Package sdk builds the aws-sdk-go-v2 clients the AWS provider uses, from the standard configuration chain
// (environment, shared config, IRSA), and classifies their errors (throttling, not found, capacity) so the
// rest of the provider branches on typed errors instead of strings.
package sdk
