package tokenstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"
)

// Windows has no permission bits: os.FileMode reports 0666 for every
// writable file. Who may use a file is decided by its access control list,
// so the store sets one that grants the current user alone on every file
// it creates, and checks the list of every file it opens.

// harmlessRights are the rights another user may hold on a store file:
// they reveal neither the content nor let anyone change it.
const harmlessRights = windows.SYNCHRONIZE | windows.READ_CONTROL | windows.FILE_READ_ATTRIBUTES | windows.FILE_READ_EA

// checkPrivate refuses anything but a regular file whose access control
// list grants no one but its owner, the current user, SYSTEM and the
// Administrators group more than [harmlessRights].
func checkPrivate(file *os.File) (os.FileInfo, error) {
	fi, err := file.Stat()
	if err != nil {
		return nil, err
	}
	insecure := func(why string) (os.FileInfo, error) {
		return nil, fmt.Errorf("%w: %s %s", ErrInsecureFile, filepath.Base(file.Name()), why)
	}
	if !fi.Mode().IsRegular() {
		return insecure("is not a regular file")
	}
	sd, err := windows.GetSecurityInfo(windows.Handle(file.Fd()), windows.SE_FILE_OBJECT,
		windows.OWNER_SECURITY_INFORMATION|windows.DACL_SECURITY_INFORMATION)
	if err != nil {
		return nil, err
	}
	owner, _, err := sd.Owner()
	if err != nil {
		return nil, err
	}
	dacl, _, err := sd.DACL()
	if err != nil {
		return nil, err
	}
	if dacl == nil { // a null DACL grants everyone full access
		return insecure("has no access control list")
	}
	trusted, err := trustedSIDs(owner)
	if err != nil {
		return nil, err
	}
	for i := range uint32(dacl.AceCount) {
		var ace *windows.ACCESS_ALLOWED_ACE
		if err := windows.GetAce(dacl, i, &ace); err != nil {
			return nil, err
		}
		switch {
		case ace.Header.AceType == windows.ACCESS_DENIED_ACE_TYPE, ace.Header.AceFlags&windows.INHERIT_ONLY_ACE != 0:
			continue // takes rights away, or applies only to children
		case ace.Header.AceType != windows.ACCESS_ALLOWED_ACE_TYPE:
			return insecure("has an access control entry of an unexpected type")
		}
		if ace.Mask&^harmlessRights == 0 {
			continue
		}
		sid := (*windows.SID)(unsafe.Pointer(&ace.SidStart))
		if !trusted(sid) {
			return insecure("grants another user access (" + sid.String() + ")")
		}
	}
	return fi, nil
}

// trustedSIDs returns a predicate for the principals that may hold any
// right on a store file: its owner, the current user, SYSTEM and the
// Administrators group (which can take ownership of any file anyway).
func trustedSIDs(owner *windows.SID) (func(*windows.SID) bool, error) {
	user, err := currentUser()
	if err != nil {
		return nil, err
	}
	system, err := windows.CreateWellKnownSid(windows.WinLocalSystemSid)
	if err != nil {
		return nil, err
	}
	admins, err := windows.CreateWellKnownSid(windows.WinBuiltinAdministratorsSid)
	if err != nil {
		return nil, err
	}
	return func(sid *windows.SID) bool {
		return sid.Equals(owner) || sid.Equals(user) || sid.Equals(system) || sid.Equals(admins)
	}, nil
}

func currentUser() (*windows.SID, error) {
	u, err := windows.GetCurrentProcessToken().GetTokenUser()
	if err != nil {
		return nil, err
	}
	return u.User.Sid, nil
}

// makePrivate gives file a protected access control list (nothing
// inherited from the directory) that grants the current user full access
// and no one else anything: the Windows form of mode 0600.
func makePrivate(file *os.File) error {
	user, err := currentUser()
	if err != nil {
		return err
	}
	acl, err := windows.ACLFromEntries([]windows.EXPLICIT_ACCESS{{
		AccessPermissions: windows.STANDARD_RIGHTS_REQUIRED | windows.SYNCHRONIZE | 0x1ff, // FILE_ALL_ACCESS
		AccessMode:        windows.SET_ACCESS,
		Inheritance:       windows.NO_INHERITANCE,
		Trustee: windows.TRUSTEE{
			TrusteeForm:  windows.TRUSTEE_IS_SID,
			TrusteeType:  windows.TRUSTEE_IS_USER,
			TrusteeValue: windows.TrusteeValueFromSID(user),
		},
	}}, nil)
	if err != nil {
		return err
	}
	// By name: a handle os.OpenFile returns lacks WRITE_DAC, which the
	// file's owner always has.
	return windows.SetNamedSecurityInfo(file.Name(), windows.SE_FILE_OBJECT,
		windows.DACL_SECURITY_INFORMATION|windows.PROTECTED_DACL_SECURITY_INFORMATION, nil, nil, acl, nil)
}

// replaceAttempts bounds how long replaceFile waits for readers (about
// two seconds): a reader holds the store file open only while it reads it
// (at most maxFileSize).
const replaceAttempts = 400

// replaceFile renames src over dst atomically (MoveFileEx with
// MOVEFILE_REPLACE_EXISTING). Go opens files without FILE_SHARE_DELETE, so
// the rename fails while another process is reading dst: it is tried
// again every lockPoll, at most replaceAttempts times, until ctx is done.
func replaceFile(ctx context.Context, src, dst string) error {
	for attempt := 1; ; attempt++ {
		err := os.Rename(src, dst)
		if err == nil || !(errors.Is(err, windows.ERROR_ACCESS_DENIED) || errors.Is(err, windows.ERROR_SHARING_VIOLATION)) ||
			attempt == replaceAttempts {
			return err
		}
		t := time.NewTimer(lockPoll)
		select {
		case <-ctx.Done():
			t.Stop()
			return errors.Join(err, ctx.Err())
		case <-t.C:
		}
	}
}
