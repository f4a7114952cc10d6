// Package readiness sets a NodePool's ValidationSucceeded and NodeClassReady conditions (and so its root Ready):
// the node class reference must name a supported kind that exists and is Ready, and the template must use
// allowed label keys.
package readiness
