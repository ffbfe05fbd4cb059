// Package archtest holds tests that keep Handset's architecture honest: which internal
// package may import which (deny by default: every package needs a rule and every arrow an
// entry, docs/architecture.md), which package may import each library from outside the
// standard library, in either build (default and embedded), and that every package says
// what it owns in a package comment.
package archtest
