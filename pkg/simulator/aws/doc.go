// Package awssim is a local, in-memory AWS simulator for Dovetail: one http.Handler that speaks the EC2, IAM,
// SSM, Pricing, SQS and EKS wire protocols well enough for aws-sdk-go-v2, runs an instance lifecycle that
// creates kwok Nodes through a NodeSink, and offers a fault-injection admin API under /_awssim/.
package awssim
