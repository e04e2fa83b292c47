package redis

import (
	"fmt"
	"strconv"
)

// Helpers for the generic values go-redis returns from Do: string, int64, []any for
// arrays, and map[any]any for RESP3 maps. RESP2 sends maps as flat key/value arrays.

func replyString(v any) (string, error) {
	switch s := v.(type) {
	case string:
		return s, nil
	case []byte:
		return string(s), nil
	case int64:
		return strconv.FormatInt(s, 10), nil
	default:
		return "", fmt.Errorf("want a string, got %T", v)
	}
}

func replyInt(v any) (int64, error) {
	switch n := v.(type) {
	case int64:
		return n, nil
	case string:
		i, err := strconv.ParseInt(n, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("want an integer, got %q", n)
		}
		return i, nil
	default:
		return 0, fmt.Errorf("want an integer, got %T", v)
	}
}

func replyArray(v any) ([]any, error) {
	a, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("want an array, got %T", v)
	}
	return a, nil
}

// replyMap turns a RESP3 map or a RESP2 flat key/value array into ordered pairs with string
// keys. Order matters only for RESP2 and is kept so that results are deterministic.
func replyMap(v any) ([]replyPair, error) {
	switch m := v.(type) {
	case map[any]any:
		pairs := make([]replyPair, 0, len(m))
		for k, val := range m {
			key, err := replyString(k)
			if err != nil {
				return nil, fmt.Errorf("map key: %w", err)
			}
			pairs = append(pairs, replyPair{key, val})
		}
		return pairs, nil
	case map[string]any:
		pairs := make([]replyPair, 0, len(m))
		for k, val := range m {
			pairs = append(pairs, replyPair{k, val})
		}
		return pairs, nil
	case []any:
		if len(m)%2 != 0 {
			return nil, fmt.Errorf("key/value array has odd length %d", len(m))
		}
		pairs := make([]replyPair, 0, len(m)/2)
		for i := 0; i < len(m); i += 2 {
			key, err := replyString(m[i])
			if err != nil {
				return nil, fmt.Errorf("map key: %w", err)
			}
			pairs = append(pairs, replyPair{key, m[i+1]})
		}
		return pairs, nil
	default:
		return nil, fmt.Errorf("want a map, got %T", v)
	}
}

type replyPair struct {
	key   string
	value any
}
