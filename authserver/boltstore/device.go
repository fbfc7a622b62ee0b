package boltstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/mcpauth/mcpauth/authserver"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// The device codes' buckets: the records by Key, and the Key of each by
// UserCodeKey.
const (
	deviceBucket     = "device_codes"
	deviceUserBucket = "device_user_codes"
)

// SaveDeviceCode implements [authserver.DeviceCodeStore]. The file holds
// at most [authserver.MaxDeviceCodes] codes, counted after dropping the
// expired ones when full.
func (b *Store) SaveDeviceCode(_ context.Context, d *authserver.DeviceCode) error {
	return b.db.Update(func(tx *bolt.Tx) error {
		codes, users := tx.Bucket([]byte(deviceBucket)), tx.Bucket([]byte(deviceUserBucket))
		if codes.Get([]byte(d.Key)) != nil || users.Get([]byte(d.UserCodeKey)) != nil {
			return authserver.ErrAlreadyUsed
		}
		if codes.Stats().KeyN >= authserver.MaxDeviceCodes {
			if err := sweepDevices(tx, func(c *authserver.DeviceCode) bool { return !c.ExpiresAt.After(d.IssuedAt) }); err != nil {
				return err
			}
			if codes.Stats().KeyN >= authserver.MaxDeviceCodes {
				return &oauthmeta.Error{Code: oauthmeta.CodeTemporarilyUnavailable, Description: "too many device logins in progress"}
			}
		}
		if err := users.Put([]byte(d.UserCodeKey), []byte(d.Key)); err != nil {
			return err
		}
		return putIn(tx, deviceBucket, d.Key, d)
	})
}

// DeviceCode implements [authserver.DeviceCodeStore].
func (b *Store) DeviceCode(_ context.Context, key string) (*authserver.DeviceCode, error) {
	return get[authserver.DeviceCode](b, deviceBucket, key)
}

// DeviceCodeByUserCode implements [authserver.DeviceCodeStore].
func (b *Store) DeviceCodeByUserCode(_ context.Context, userCodeKey string) (*authserver.DeviceCode, error) {
	var d authserver.DeviceCode
	err := b.db.View(func(tx *bolt.Tx) error {
		key := tx.Bucket([]byte(deviceUserBucket)).Get([]byte(userCodeKey))
		if key == nil {
			return authserver.ErrNotFound
		}
		return getIn(tx, deviceBucket, string(key), &d)
	})
	if err != nil {
		return nil, err
	}
	return &d, nil
}

// UpdateDeviceCode implements [authserver.DeviceCodeStore] in one write
// transaction.
func (b *Store) UpdateDeviceCode(_ context.Context, key string, change func(*authserver.DeviceCode) error) (*authserver.DeviceCode, error) {
	var d authserver.DeviceCode
	err := b.db.Update(func(tx *bolt.Tx) error {
		if err := getIn(tx, deviceBucket, key, &d); err != nil {
			return err
		}
		k, u := d.Key, d.UserCodeKey
		if err := change(&d); err != nil {
			return err
		}
		d.Key, d.UserCodeKey = k, u
		return putIn(tx, deviceBucket, key, &d)
	})
	if err != nil {
		return nil, err
	}
	return &d, nil
}

// sweepDevices deletes the codes drop selects, and their user codes.
func sweepDevices(tx *bolt.Tx, drop func(*authserver.DeviceCode) bool) error {
	codes, users := tx.Bucket([]byte(deviceBucket)), tx.Bucket([]byte(deviceUserBucket))
	var stale []authserver.DeviceCode
	err := codes.ForEach(func(_, v []byte) error {
		var d authserver.DeviceCode
		if err := json.Unmarshal(v, &d); err != nil {
			return fmt.Errorf("boltstore: corrupt %s record: %w", deviceBucket, err)
		}
		if drop(&d) {
			stale = append(stale, d)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, d := range stale {
		if err := errors.Join(codes.Delete([]byte(d.Key)), users.Delete([]byte(d.UserCodeKey))); err != nil {
			return err
		}
	}
	return nil
}

// sweepDeviceCodes drops the codes a sweep at now drops
// ([authserver.DeviceCode.Swept]).
func (b *Store) sweepDeviceCodes(now time.Time) error {
	return b.db.Update(func(tx *bolt.Tx) error {
		return sweepDevices(tx, func(d *authserver.DeviceCode) bool { return d.Swept(now) })
	})
}
