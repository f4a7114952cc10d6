// Package iampolicy parses AWS IAM identity policies and evaluates requests against them: Allow and Deny
// statements, Action and Resource patterns with * and ? wildcards, and the string condition operators
// (StringEquals, StringNotEquals, StringLike, StringNotLike, with the ForAllValues: and ForAnyValue: set
// qualifiers) plus Null. An explicit Deny wins over any Allow, and a request no statement allows is denied.
// The awssim simulator uses it to enforce the controller's documented policy.
package iampolicy
