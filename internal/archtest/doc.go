// Package archtest holds tests that keep Handset's architecture honest: which internal
// package may import which (docs/architecture.md), and that every package says what it
// owns in a package comment.
package archtest
