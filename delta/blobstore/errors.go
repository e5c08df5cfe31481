package blobstore

import (
	"errors"
	"fmt"
	"net/http"
	"os"

	"cloud.google.com/go/storage"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/aws/smithy-go"
	"gocloud.dev/gcerrors"
	"google.golang.org/api/googleapi"

	"github.com/deltafs/deltafs/delta"
)

// Errors of remote stores that are not the engine's sentinels. Every error
// of a Store names the operation and the object's URL without secrets.
var (
	// ErrPermission reports that the store refused the credentials or the
	// operation (HTTP 401/403: a wrong key, an expired token, a policy).
	ErrPermission = errors.New("access denied: check the credentials")
	// ErrNoBucket reports that the bucket (S3, GCS) or container (Azure)
	// does not exist.
	ErrNoBucket = errors.New("bucket does not exist")
	// ErrTimeout reports that the store did not answer a request within the
	// Store's request timeout.
	ErrTimeout = errors.New("request timed out")
	// ErrNotAtomic reports that the store accepted a second put-if-absent of
	// one key: commits through it could overwrite each other.
	ErrNotAtomic = errors.New("put-if-absent is not exclusive on this store")
)

// wrap converts a gocloud error into one that names the operation and object
// and wraps the engine's sentinel (or this package's) for its kind. Listing
// errors that say "not found" are about the bucket: a prefix always lists.
func (s *Store) wrap(op, key string, err error) error {
	loc := s.where.at(key)
	if kind := classify(op, err); kind != nil {
		return fmt.Errorf("%s %s: %w (%v)", op, loc, kind, cause(err))
	}
	switch gcerrors.Code(err) {
	case gcerrors.NotFound:
		return fmt.Errorf("%s %s: %w", op, loc, delta.ErrNotExist)
	case gcerrors.FailedPrecondition, gcerrors.AlreadyExists:
		return fmt.Errorf("%s %s: %w", op, loc, delta.ErrExists)
	}
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%s %s: %w", op, loc, delta.ErrNotExist)
	}
	return fmt.Errorf("%s %s: %w", op, loc, err)
}

// classify returns ErrPermission, ErrNoBucket or nil for err.
func classify(op string, err error) error {
	if st := httpStatus(err); st == http.StatusUnauthorized || st == http.StatusForbidden {
		return ErrPermission
	}
	if gcerrors.Code(err) == gcerrors.PermissionDenied {
		return ErrPermission
	}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		switch ae.ErrorCode() {
		case "NoSuchBucket":
			return ErrNoBucket
		case "InvalidAccessKeyId", "SignatureDoesNotMatch", "ExpiredToken", "InvalidToken":
			return ErrPermission
		}
	}
	var re *azcore.ResponseError
	if errors.As(err, &re) && re.ErrorCode == "ContainerNotFound" {
		return ErrNoBucket
	}
	if errors.Is(err, storage.ErrBucketNotExist) {
		return ErrNoBucket
	}
	if op == "list" && gcerrors.Code(err) == gcerrors.NotFound {
		return ErrNoBucket
	}
	return nil
}

// httpStatus returns the HTTP status of a failed request, or 0.
func httpStatus(err error) int {
	var withCode interface{ HTTPStatusCode() int } // AWS SDK response errors
	if errors.As(err, &withCode) {
		return withCode.HTTPStatusCode()
	}
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		return re.StatusCode
	}
	var ge *googleapi.Error
	if errors.As(err, &ge) {
		return ge.Code
	}
	return 0
}

// cause is the innermost message of err, for a short reason after a
// classified error: SDK errors repeat the request URL and headers.
func cause(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode() + ": " + ae.ErrorMessage()
	}
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		return fmt.Sprintf("%d %s", re.StatusCode, re.ErrorCode)
	}
	var ge *googleapi.Error
	if errors.As(err, &ge) {
		return fmt.Sprintf("%d %s", ge.Code, ge.Message)
	}
	return err.Error()
}
