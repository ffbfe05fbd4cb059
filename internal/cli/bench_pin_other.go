//go:build !linux

package cli

import "errors"

func pinApart(int) error { return errors.New("--pin works on Linux only") }
