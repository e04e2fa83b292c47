package builder

import (
	"strings"
	"testing"
)

// TestExporterPasswordSource: the exporter logs in with the password its server requires, read
// from the same operator-owned Secret the server's pod projects, whose key holds the trimmed
// password; never from the user's Secret, whose value may end in a newline the server never
// sees. Redis containers' REDISCLI_AUTH names the very same key. Without a password the
// exporter has none.
func TestExporterPasswordSource(t *testing.T) {
	checked := map[string]bool{}
	for name, o := range allBuilds(t) {
		t.Run(name, func(t *testing.T) {
			for _, sts := range o.StatefulSets {
				pod := sts.Spec.Template.Spec
				if !hasContainer(pod, exporterContainerName) {
					continue
				}
				kind := strings.Split(name, "-")[0]
				exp := envNamed(container(t, pod, exporterContainerName).Env, exporterPasswordEnv)
				// The server's password is the requirepass of the auth file its pod projects.
				authKey := RedisAuthKey
				if sts.Labels[LabelSetupType] == SetupSentinel {
					authKey = SentinelAuthKey
				}
				source, want := "", ""
				for _, v := range pod.Volumes {
					if v.Projected == nil {
						continue
					}
					for _, src := range v.Projected.Sources {
						if src.Secret == nil || o.Secret(src.Secret.Name) == nil {
							continue
						}
						if pw, ok := PasswordOfAuthFile(string(o.Secret(src.Secret.Name).Data[authKey])); ok {
							source, want = src.Secret.Name, pw
						}
					}
				}
				if source == "" {
					if exp != nil {
						t.Errorf("%s: the server requires no password, the exporter has %+v", sts.Name, exp)
					}
					continue
				}
				if exp == nil || exp.Value != "" || exp.ValueFrom == nil || exp.ValueFrom.SecretKeyRef == nil {
					t.Errorf("%s: exporter %s %+v, want a secretKeyRef", sts.Name, exporterPasswordEnv, exp)
					continue
				}
				ref := exp.ValueFrom.SecretKeyRef
				wantEqual(t, sts.Name+" exporter password Secret", ref.Name, source)
				wantEqual(t, sts.Name+" exporter password key", ref.Key, RedisPasswordKey)
				wantEqual(t, sts.Name+" exporter password", string(o.Secret(source).Data[ref.Key]), want)
				if cli := envNamed(container(t, pod, sts.Name).Env, redisCLIAuthEnv); cli != nil {
					wantEqual(t, sts.Name+" exporter and "+redisCLIAuthEnv, ref, cli.ValueFrom.SecretKeyRef)
				}
				checked[kind] = true
			}
		})
	}
	for _, kind := range []string{"redis", "rediscluster", "redisreplication", "redissentinel"} {
		if !checked[kind] {
			t.Errorf("no %s build has an exporter with a password", kind)
		}
	}
}
