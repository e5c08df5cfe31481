package blobstore

import (
	"context"
	"errors"
	"net/url"
	"os"
	"time"

	"gocloud.dev/blob"
	"gocloud.dev/blob/azureblob"
	_ "gocloud.dev/blob/gcsblob" // gs:// URLs
	_ "gocloud.dev/blob/memblob" // mem:// URLs
	_ "gocloud.dev/blob/s3blob"  // s3:// URLs
)

// DefaultRequestTimeout bounds each request to a remote store opened with
// Open: a LIST page, a HEAD, a conditional PUT, the wait for the first or
// next bytes of a ranged GET. The SDKs' own retries happen within it (GCS
// retries idempotent requests until the context ends).
const DefaultRequestTimeout = 30 * time.Second

// openBucket opens the bucket of u (a URL without path). s3:// and gs://
// go through gocloud's default openers, which read the environment on
// every open (AWS config chain; STORAGE_EMULATOR_HOST). azblob:// does not:
// gocloud's default azblob opener reads the environment once per process,
// so the credentials are re-read here on every open, as for the others.
//
// For s3:// the SDK's response checksum validation defaults to
// when_required unless the URL sets response_checksum_validation: by
// default the SDK asks for checksums on every GET and logs a warning to
// stderr for each object stored without one (objects uploaded by older
// clients, most S3-compatible servers) or in parts; ranged reads, which
// are most of ours, are never validated anyway.
func openBucket(ctx context.Context, u *url.URL) (*blob.Bucket, error) {
	if u.Scheme == "s3" {
		q := u.Query()
		if !q.Has("response_checksum_validation") {
			q.Set("response_checksum_validation", "when_required")
			c := *u
			c.RawQuery = q.Encode()
			u = &c
		}
	}
	if u.Scheme != azureblob.Scheme {
		return blob.OpenBucket(ctx, u.String())
	}
	opener := &azureblob.URLOpener{
		MakeClient:        azureblob.NewDefaultClient,
		ServiceURLOptions: *azureblob.NewDefaultServiceURLOptions(),
	}
	if err := checkSASOrigin(&opener.ServiceURLOptions, u); err != nil {
		return nil, err
	}
	return opener.OpenBucketURL(ctx, u)
}

// checkSASOrigin refuses a URL whose query options would send the SAS token
// of AZURE_STORAGE_SAS_TOKEN to another service than the one it is for,
// as gocloud's default opener does.
func checkSASOrigin(opts *azureblob.ServiceURLOptions, u *url.URL) error {
	if os.Getenv("AZURE_STORAGE_SAS_TOKEN") == "" {
		return nil
	}
	for _, k := range []string{"domain", "protocol", "cdn", "localemu", "storage_account"} {
		if u.Query().Has(k) {
			return errors.New("azblob URL cannot change the service endpoint (" + k + ") when AZURE_STORAGE_SAS_TOKEN is set")
		}
	}
	return nil
}
