package builder

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestNoSecretOutsideSecrets builds every kind with distinctive passwords and checks that they
// reach the auth Secrets and nothing else: not a container's command, args or plain env value,
// not a ConfigMap, not any other field of any other object.
func TestNoSecretOutsideSecrets(t *testing.T) {
	canaries := []string{testPassword, testSentinelPassword}
	found := map[string]bool{}
	for _, c := range allCases() {
		t.Run(c.name, func(t *testing.T) {
			o := mustBuild(t)(c.build())
			leaks := func(where, s string) {
				t.Helper()
				for _, pw := range canaries {
					if strings.Contains(s, pw) {
						t.Errorf("password leaks into %s", where)
					}
				}
			}
			for _, sts := range o.StatefulSets {
				pod := sts.Spec.Template.Spec
				for _, ct := range append(append([]corev1.Container{}, pod.InitContainers...), pod.Containers...) {
					where := sts.Name + " container " + ct.Name
					leaks(where+" command", strings.Join(ct.Command, " "))
					leaks(where+" args", strings.Join(ct.Args, " "))
					for _, e := range ct.Env {
						leaks(where+" env "+e.Name, e.Value)
					}
				}
			}
			for _, cm := range o.ConfigMaps {
				for k, v := range cm.Data {
					leaks("ConfigMap "+cm.Name+" key "+k, v)
				}
				for k, v := range cm.BinaryData {
					leaks("ConfigMap "+cm.Name+" binary key "+k, string(v))
				}
			}
			// And anywhere else, in any encoding a reader would see.
			for _, obj := range o.All() {
				if _, isSecret := obj.(*corev1.Secret); isSecret {
					continue
				}
				j, err := json.Marshal(obj)
				if err != nil {
					t.Fatal(err)
				}
				leaks(obj.GetObjectKind().GroupVersionKind().Kind+" "+obj.GetName(), string(j))
				leaks(obj.GetName()+" as YAML", string(toYAML(t, obj)))
			}
			for _, s := range o.Secrets {
				for _, v := range s.Data {
					for _, pw := range canaries {
						if strings.Contains(string(v), pw) {
							found[pw] = true
						}
					}
				}
				if len(s.StringData) != 0 {
					t.Errorf("Secret %s uses stringData", s.Name)
				}
			}
		})
	}
	// The canaries did go through the builds: the check above is not vacuous.
	for _, pw := range canaries {
		if !found[pw] {
			t.Errorf("no auth Secret carries %q: the leak check tested nothing", pw)
		}
	}
}

// TestPasswordsAreQuoted: a password with spaces, quotes, backslashes or newlines must be read
// back by Redis as exactly itself, and must not inject directives.
func TestPasswordsAreQuoted(t *testing.T) {
	for _, pw := range []string{
		"plain", "with space", `quo"te`, `back\slash`, "new\nline requirepass x", "tab\tand\x00nul\x7f", "ünïcødé", `"\x41"`,
	} {
		got := redisAuthFile(pw, false)
		lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
		if len(lines) != 2 {
			t.Errorf("%q renders as %d lines: %q", pw, len(lines), got)
			continue
		}
		for i, directive := range []string{"requirepass", "masterauth"} {
			args := splitConfigArgs(t, lines[i])
			if len(args) != 2 || args[0] != directive || args[1] != pw {
				t.Errorf("%q: line %q reads back as %q", pw, lines[i], args)
			}
		}
		sl := strings.TrimSuffix(sentinelAuthFile("mymaster", pw, pw), "\n")
		for _, line := range strings.Split(sl, "\n") {
			args := splitConfigArgs(t, line)
			if args[len(args)-1] != pw {
				t.Errorf("%q: sentinel line %q reads back as %q", pw, line, args)
			}
		}
		// Sentinel rewrites auth-pass unquoted; only passwords that survive that are accepted:
		// no whitespace, no quote (one starts a quoted string even mid-word), no control byte.
		survives := map[string]bool{"plain": true, `back\slash`: true, "ünïcødé": true}[pw]
		if err := CheckSentinelMasterPassword(pw); (err == nil) != survives {
			t.Errorf("%q: accepted as a sentinel master password = %v, want %v", pw, err == nil, survives)
		}
	}
}

// splitConfigArgs reads a config line the way Redis' sdssplitargs does, for the subset the
// builders write: bare words and double-quoted strings with \\, \", \n, \r, \t, \b, \a and \xHH.
func splitConfigArgs(t *testing.T, line string) []string {
	t.Helper()
	var out []string
	i := 0
	for i < len(line) {
		for i < len(line) && (line[i] == ' ' || line[i] == '\t') {
			i++
		}
		if i == len(line) {
			break
		}
		var b strings.Builder
		if line[i] != '"' {
			for i < len(line) && line[i] != ' ' && line[i] != '\t' {
				b.WriteByte(line[i])
				i++
			}
			out = append(out, b.String())
			continue
		}
		i++
		for {
			if i >= len(line) {
				t.Fatalf("unterminated quotes in %q", line)
			}
			c := line[i]
			switch {
			case c == '"':
				i++
				if i < len(line) && line[i] != ' ' {
					t.Fatalf("closing quote not followed by a space in %q", line)
				}
				out = append(out, b.String())
				goto next
			case c == '\\' && i+3 < len(line) && line[i+1] == 'x':
				var v byte
				for _, h := range line[i+2 : i+4] {
					v <<= 4
					switch {
					case h >= '0' && h <= '9':
						v |= byte(h - '0')
					case h >= 'a' && h <= 'f':
						v |= byte(h-'a') + 10
					default:
						t.Fatalf("bad hex escape in %q", line)
					}
				}
				b.WriteByte(v)
				i += 4
			case c == '\\' && i+1 < len(line):
				m := map[byte]byte{'n': '\n', 'r': '\r', 't': '\t', 'b': '\b', 'a': '\a'}
				if r, ok := m[line[i+1]]; ok {
					b.WriteByte(r)
				} else {
					b.WriteByte(line[i+1])
				}
				i += 2
			default:
				b.WriteByte(c)
				i++
			}
		}
	next:
	}
	return out
}

// TestPodsHoldNoTokenAndPrivateSecretFiles checks the blast radius of a Redis or sentinel pod:
// no ServiceAccount token (they never call the API server), and every file with a secret in
// it (password, ACL users, TLS key) readable by the owner and the fsGroup only, while the
// non-secret config keeps the default mode.
func TestPodsHoldNoTokenAndPrivateSecretFiles(t *testing.T) {
	secretFiles := 0
	for _, c := range allCases() {
		t.Run(c.name, func(t *testing.T) {
			o := mustBuild(t)(c.build())
			for _, sts := range o.StatefulSets {
				pod := sts.Spec.Template.Spec
				if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
					t.Errorf("%s: automountServiceAccountToken = %v, want false", sts.Name, pod.AutomountServiceAccountToken)
				}
				if pod.SecurityContext == nil || pod.SecurityContext.FSGroup == nil {
					t.Fatalf("%s: no fsGroup: the file modes below would lock the redis user out", sts.Name)
				}
				for _, v := range pod.Volumes {
					switch {
					case v.Projected != nil:
						for _, src := range v.Projected.Sources {
							if src.Secret == nil {
								for _, it := range src.ConfigMap.Items {
									if it.Mode != nil {
										t.Errorf("%s: config %s has mode %o, want the default", sts.Name, it.Path, *it.Mode)
									}
								}
								continue
							}
							for _, it := range src.Secret.Items {
								secretFiles++
								if it.Mode == nil || *it.Mode != 0o440 {
									t.Errorf("%s: secret file %s mode %s, want 0440", sts.Name, it.Path, modeString(it.Mode))
								}
							}
						}
					case v.Secret != nil:
						secretFiles++
						// The user's mode (the full fixtures set 0400) wins over our 0440.
						if m := v.Secret.DefaultMode; m == nil || *m&0o077 != *m&0o040 {
							t.Errorf("%s: secret volume %s mode %s, want no more than owner and group read", sts.Name, v.Name, modeString(m))
						}
					}
				}
			}
		})
	}
	if secretFiles == 0 {
		t.Error("no build mounts a secret file: the mode check tested nothing")
	}
}

// TestSecretFilesKeepDefaultModeWithoutFSGroup: a user's pod security context without an
// fsGroup leaves the files root's, so a restrictive mode would keep Redis from reading them.
func TestSecretFilesKeepDefaultModeWithoutFSGroup(t *testing.T) {
	cr := fullReplication()
	cr.Spec.PodSecurityContext = &corev1.PodSecurityContext{RunAsUser: ptrTo[int64](1000)}
	o := mustBuild(t)(BuildRedisReplication(RedisReplicationInput{CR: cr, Password: testPassword, SentinelPassword: testSentinelPassword, MasterHost: testMasterHost}))
	pod := o.StatefulSets[0].Spec.Template.Spec
	for _, v := range pod.Volumes {
		if v.Projected != nil {
			for _, src := range v.Projected.Sources {
				if src.Secret != nil {
					for _, it := range src.Secret.Items {
						if it.Mode != nil {
							t.Errorf("secret file %s mode %o without fsGroup", it.Path, *it.Mode)
						}
					}
				}
			}
		}
	}
}

func modeString(m *int32) string {
	if m == nil {
		return "unset"
	}
	return fmt.Sprintf("%#o", *m)
}
