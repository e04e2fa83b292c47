package builder

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rediskube/redis-operator/internal/redis"
)

// aclMarkerPrefix names the user, always off and without rights, that the rendered aclfile
// ends with: its name carries the hash of the file, so ACL USERS tells which file a pod has
// loaded without reading the file (kubelet refreshes a Secret volume only after a while).
const aclMarkerPrefix = "redis-operator-acl-"

// renderACLFile is the aclfile the pods read: the user's checked file, with the operator's
// password (the kubernetesConfig.redisSecret one) added to the default user, because Redis
// ignores requirepass once it reads an aclfile, and a last line naming the file's version.
// The password goes in as its SHA-256, so the file never holds it in clear.
//
// With operatorUser (the user's file turns the default user off) the default line is left as
// the user wrote it and the operator's own user, with that password and every right, is added.
func renderACLFile(userFile, password string, operatorUser bool) string {
	var b strings.Builder
	hash := ""
	if password != "" {
		sum := sha256.Sum256([]byte(password))
		hash = "#" + hex.EncodeToString(sum[:])
	}
	hasDefault := false
	for _, line := range strings.Split(userFile, "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		if len(fields) >= 2 && fields[0] == "user" && fields[1] == redis.DefaultUser && hash != "" && !operatorUser {
			hasDefault = true
			// Rules apply left to right: the operator's password comes last, so it survives
			// a resetpass or nopass of the user's.
			fields = append(fields, hash)
		}
		b.WriteString(strings.Join(fields, " ") + "\n")
	}
	switch {
	case operatorUser && hash != "":
		b.WriteString("user " + redis.OperatorUser + " on " + hash + " ~* &* +@all\n")
	case !hasDefault && hash != "":
		// Redis would make the default user password-less; the operator's keeps it closed.
		b.WriteString("user default on " + hash + " ~* &* +@all\n")
	}
	sum := sha256.Sum256([]byte(b.String()))
	b.WriteString("user " + aclMarkerPrefix + hex.EncodeToString(sum[:8]) + " off\n")
	return b.String()
}

// ACLFileMarker is the name of the user that marks the rendered aclfile content (see
// renderACLFile), "" when content is not one.
func ACLFileMarker(content string) string {
	lines := strings.Split(strings.TrimSuffix(content, "\n"), "\n")
	fields := strings.Fields(lines[len(lines)-1])
	if len(fields) == 3 && fields[0] == "user" && strings.HasPrefix(fields[1], aclMarkerPrefix) {
		return fields[1]
	}
	return ""
}

// IsACLMarker tells whether a user name is one of the operator's file markers.
func IsACLMarker(user string) bool { return strings.HasPrefix(user, aclMarkerPrefix) }

// aclSecret holds the rendered aclfile of the resource instance, when spec.acl.secret is set.
func aclSecret(owner metav1.OwnerReference, namespace, instance, setupType, userFile, password string, operatorUser bool) *corev1.Secret {
	return authSecret(owner, namespace, instance, setupType, ACLSecretName(instance),
		map[string]string{ACLFileKey: renderACLFile(userFile, password, operatorUser)})
}
