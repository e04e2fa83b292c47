package redis

import "testing"

func TestParseServerInfo(t *testing.T) {
	for _, tc := range []struct {
		name, text  string
		want        string // String()
		has7, has72 bool
		refused     bool
	}{
		{name: "redis 7.0", text: "# Server\r\nredis_version:7.0.15\r\nredis_git_sha1:00000000\r\nredis_mode:standalone\r\n",
			want: "redis 7.0.15", has7: true},
		{name: "redis 6.2", text: "# Server\r\nredis_version:6.2.14\r\nredis_mode:cluster\r\n", want: "redis 6.2.14"},
		// Valkey 8.0.1 as it answers: redis_version is the Redis release it is compatible with.
		{name: "valkey 8", text: "# Server\r\nredis_version:7.2.4\r\nserver_name:valkey\r\nvalkey_version:8.0.1\r\nredis_git_sha1:00000000\r\n",
			want: "valkey 8.0.1", has7: true, has72: true},
		{name: "valkey without server_name", text: "redis_version:7.2.4\nvalkey_version:7.2.5\n", want: "valkey 7.2.5", has7: true, has72: true},
		{name: "a two-part version", text: "redis_version:8.0\n", want: "redis 8.0", has7: true, has72: true},
		{name: "no version", text: "# Server\r\nredis_mode:standalone\r\n", refused: true},
		{name: "not a version", text: "redis_version:seven\n", refused: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := ParseServerInfo(tc.text)
			if tc.refused {
				if err == nil {
					t.Errorf("parsed %v", s)
				}
				return
			}
			if err != nil || s.String() != tc.want || s.Has(7, 0) != tc.has7 || s.Has(7, 2) != tc.has72 || !s.Has(6, 0) {
				t.Errorf("%v (%v): has 7.0 %v, 7.2 %v; want %s, %v, %v", s, err, s.Has(7, 0), s.Has(7, 2), tc.want, tc.has7, tc.has72)
			}
		})
	}
	var unknown ServerInfo
	if unknown.Known() || unknown.Has(3, 0) || unknown.String() != "unknown server" {
		t.Errorf("the zero ServerInfo claims to know the server: %v", unknown)
	}
}
