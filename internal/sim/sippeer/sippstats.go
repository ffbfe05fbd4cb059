package sippeer

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"os"
	"strconv"
)

// maxReadLog bounds how much of a log file is read back into a result.
const maxReadLog = 4 << 20

// readLog is the start of the log file at path ("" when there is none: sipp writes the
// error log only when something went wrong).
func readLog(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	buf := make([]byte, maxReadLog)
	n, _ := f.Read(buf)
	return string(buf[:n])
}

// readStats reads the successful and failed call counts, cumulative, from the last row
// of sipp's statistics file (-trace_stat, ';'-separated, a header row naming the columns).
func readStats(path string) (successful, failed int, err error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, fmt.Errorf("sipp statistics: %w", err)
	}
	return parseStats(path, raw)
}

// parseStats reads the counts from the statistics file named path, read into raw.
func parseStats(path string, raw []byte) (successful, failed int, err error) {
	r := csv.NewReader(bytes.NewReader(raw))
	r.Comma, r.FieldsPerRecord, r.LazyQuotes = ';', -1, true
	rows, err := r.ReadAll()
	if err != nil || len(rows) < 2 {
		return 0, 0, fmt.Errorf("sipp statistics %s: no rows (%v)", path, err)
	}
	header, last := rows[0], rows[len(rows)-1]
	column := func(name string) (int, error) {
		for i, h := range header {
			if h == name && i < len(last) {
				return strconv.Atoi(last[i])
			}
		}
		return 0, fmt.Errorf("sipp statistics %s: no column %s", path, name)
	}
	if successful, err = column("SuccessfulCall(C)"); err != nil {
		return 0, 0, err
	}
	failed, err = column("FailedCall(C)")
	return successful, failed, err
}
