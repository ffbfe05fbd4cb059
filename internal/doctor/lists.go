package doctor

import (
	"fmt"
	"strings"
)

// FirstFew joins up to n items for a detail: "a, b, c and 4 more".
func FirstFew(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(items[:n], ", "), len(items)-n)
}
