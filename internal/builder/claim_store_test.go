package builder

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rediskube/redis-operator/api/v1alpha1"
)

func claimStoreInput() ClaimStoreInput {
	return ClaimStoreInput{Namespace: "team-a", Claim: v1alpha1.PVCStorage{ClaimName: "backups", SubPath: "redis/nightly"},
		Image: DefaultClaimStoreImage, InitImage: DefaultClaimStoreInitImage,
		AccessKeyID: "test-access-key", SecretAccessKey: "test-secret-key"}
}

// TestClaimStoreGolden keeps the claim store's objects as testdata/claim-store.yaml holds them:
// the gateway of config/samples/backup/s3-store.yaml over the claim's subPath.
func TestClaimStoreGolden(t *testing.T) {
	st, err := BuildClaimStore(claimStoreInput())
	if err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	for i, obj := range []Object{st.Secret, st.Service, st.Deployment} {
		if i > 0 {
			got.WriteString("---\n")
		}
		got.Write(toYAML(t, obj))
	}
	path := filepath.Join("testdata", "claim-store.yaml")
	if *update {
		if err := os.WriteFile(path, got.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./internal/builder/... -update to create it)", err)
	}
	if !bytes.Equal(got.Bytes(), want) {
		t.Errorf("%s differs from the build; review the change and run with -update.\n%s", path, lineDiff(string(want), got.String()))
	}
}

// TestClaimStoreMountsTheSubPath: the bucket's folder is made in the whole claim under the
// subPath, and the gateway's root is the subPath, so that its bucket is <subPath>/backups.
func TestClaimStoreMountsTheSubPath(t *testing.T) {
	for _, tc := range []struct{ subPath, mkdir, mount string }{
		{"", "/data/backups", ""},
		{"redis/nightly", "/data/redis/nightly/backups", "redis/nightly"},
		{"redis/./nightly/", "/data/redis/nightly/backups", "redis/nightly"},
		{".", "/data/backups", ""},
	} {
		in := claimStoreInput()
		in.Claim.SubPath = tc.subPath
		st, err := BuildClaimStore(in)
		if err != nil {
			t.Fatalf("subPath %q: %v", tc.subPath, err)
		}
		pod := st.Deployment.Spec.Template.Spec
		if got := strings.Join(pod.InitContainers[0].Command, " "); got != "mkdir -p "+tc.mkdir {
			t.Errorf("subPath %q: the init container runs %q, want mkdir -p %s", tc.subPath, got, tc.mkdir)
		}
		if pod.InitContainers[0].VolumeMounts[0].SubPath != "" {
			t.Errorf("subPath %q: the init container must mount the whole claim", tc.subPath)
		}
		if got := pod.Containers[0].VolumeMounts[0].SubPath; got != tc.mount {
			t.Errorf("subPath %q: the gateway mounts subPath %q, want %q", tc.subPath, got, tc.mount)
		}
		if got := pod.Volumes[0].PersistentVolumeClaim.ClaimName; got != "backups" {
			t.Errorf("the store mounts claim %q, want backups", got)
		}
	}
}

func TestClaimStoreRefusesSubPathsOutsideTheClaim(t *testing.T) {
	for _, subPath := range []string{"/abs", "..", "a/../../b", "a/.."} {
		in := claimStoreInput()
		in.Claim.SubPath = subPath
		if _, err := BuildClaimStore(in); err == nil {
			t.Errorf("subPath %q was taken; want an error", subPath)
		}
	}
	in := claimStoreInput()
	in.Claim.SubPath = "a..b/c"
	if _, err := BuildClaimStore(in); err != nil {
		t.Errorf("subPath a..b/c is inside the claim: %v", err)
	}
}

// TestClaimStoreNameIsAServiceName: every claim name gives a valid Service name, the same
// each time, and the S3 settings name that Service, its bucket and its Secret.
func TestClaimStoreNameIsAServiceName(t *testing.T) {
	long := strings.Repeat("a", 60)
	for _, tc := range []struct{ claim, want string }{
		{"backups", "backups-backup-store"},
		{"data.backups", "claim-"},
		{long, "claim-"},
	} {
		got := ClaimStoreName(tc.claim)
		if !strings.HasPrefix(got, tc.want) || len(got) > 63 || strings.Contains(got, ".") {
			t.Errorf("ClaimStoreName(%q) = %q, want a Service name starting %q", tc.claim, got, tc.want)
		}
		if again := ClaimStoreName(tc.claim); again != got {
			t.Errorf("ClaimStoreName(%q) is %q then %q", tc.claim, got, again)
		}
	}
	if ClaimStoreName("x.y") == ClaimStoreName("x.z") {
		t.Error("two claims share a store name")
	}
	s3 := ClaimStoreS3("backups")
	if s3.Endpoint != "http://backups-backup-store:8333" || s3.Bucket != "backups" || !s3.ForcePathStyle ||
		s3.CredentialsSecret.Name != "backups-backup-store" {
		t.Errorf("ClaimStoreS3(backups) = %+v", s3)
	}
}
