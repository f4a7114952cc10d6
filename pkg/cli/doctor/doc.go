// Package doctor implements `dovetailctl doctor`: it reads the cluster and the AWS account with the controller's
// credentials chain and reports each setup check as pass, warn or fail, with the fix for anything not passing.
package doctor
