package blobstore

import (
	"context"
	"strings"
	"testing"
)

// An opener refusing a URL quotes it: Open's error must not carry the
// URL's secrets (found by the integration security test).
func TestOpenErrorHidesSecrets(t *testing.T) {
	const secret = "s3cr3t/+=value"
	for _, loc := range []string{
		"mem://t?token=" + secret,
		"s3://bucket/t?region=us-east-1&secret_access_key=" + strings.ReplaceAll(secret, "/", "%2F"),
		"gs://bucket/t?access_token=" + secret,
	} {
		_, err := Open(context.Background(), loc)
		if err == nil {
			t.Errorf("%s: opened, want an unknown-parameter error", loc)
			continue
		}
		for _, form := range []string{"s3cr3t", "%2F%2B%3Dvalue"} {
			if strings.Contains(err.Error(), form) {
				t.Errorf("%s: error quotes the secret: %v", loc, err)
			}
		}
	}
}
