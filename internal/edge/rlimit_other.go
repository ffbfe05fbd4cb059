//go:build !unix

package edge

// RaiseOpenFileLimit does nothing where there is no such limit to raise; 0 means unknown.
func RaiseOpenFileLimit() (uint64, error) { return 0, nil }
