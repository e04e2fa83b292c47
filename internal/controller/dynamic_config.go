package controller

import (
	"context"
	"fmt"
	"strings"
)

// setDynamicConfig applies "name value" lines with CONFIG SET where CONFIG GET differs, and
// returns the names it set.
func setDynamicConfig(ctx context.Context, c configEditor, lines []string) ([]string, error) {
	var changed []string
	for _, line := range lines {
		name, value, ok := strings.Cut(strings.TrimSpace(line), " ")
		if !ok || name == "" {
			return changed, fmt.Errorf("dynamicConfig line %q is not \"name value\"", line)
		}
		value = strings.Trim(strings.TrimSpace(value), `"`)
		current, err := c.ConfigGet(ctx, name)
		if err != nil {
			return changed, err
		}
		if have, ok := current[name]; ok && have == value {
			continue
		}
		if err := c.ConfigSet(ctx, name, value); err != nil {
			return changed, err
		}
		changed = append(changed, name)
	}
	return changed, nil
}
