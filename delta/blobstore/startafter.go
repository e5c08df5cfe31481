package blobstore

import (
	"cloud.google.com/go/storage"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// startAfter returns a BeforeList hook that asks backends supporting it to
// begin the listing at key (inclusive), so that listing _delta_log from a
// checkpoint does not enumerate the whole log: S3 gets ListObjectsV2's
// StartAfter, GCS the query's StartOffset. Other backends (Azure, memblob)
// list from the prefix and List filters. The hook may start a little
// early (S3's StartAfter is exclusive: it is given key without its last
// byte), never late.
func startAfter(key string) func(func(any) bool) error {
	if key == "" {
		return nil
	}
	before := key[:len(key)-1] // every key >= key sorts after this one
	return func(as func(any) bool) error {
		var in *s3.ListObjectsV2Input
		if as(&in) {
			if in.ContinuationToken == nil && before != "" {
				in.StartAfter = aws.String(before)
			}
			return nil
		}
		var q *storage.Query
		if as(&q) {
			q.StartOffset = key
		}
		return nil
	}
}
