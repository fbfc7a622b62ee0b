package oauthmeta

import (
	"errors"
	"testing"
)

func TestParseDeviceAuthorizationResponse(t *testing.T) {
	t.Parallel()
	ok := `{"device_code":"d","user_code":"BCDF-GHJK","verification_uri":"https://as/device","verification_uri_complete":"https://as/device?user_code=BCDF-GHJK","expires_in":600,"interval":5}`
	r, err := ParseDeviceAuthorizationResponse([]byte(ok))
	if err != nil || r.DeviceCode != "d" || r.UserCode != "BCDF-GHJK" || r.VerificationURI != "https://as/device" ||
		r.VerificationURIComplete == "" || r.ExpiresIn != 600 || r.Interval != 5 {
		t.Fatalf("%+v %v", r, err)
	}
	// The early draft's name, used by some servers.
	r, err = ParseDeviceAuthorizationResponse([]byte(`{"device_code":"d","user_code":"u","verification_url":"https://as/d","expires_in":1}`))
	if err != nil || r.VerificationURI != "https://as/d" || r.Interval != 0 {
		t.Fatalf("verification_url: %+v %v", r, err)
	}
	for name, body := range map[string]string{
		"no device_code":   `{"user_code":"u","verification_uri":"https://as/d","expires_in":1}`,
		"no user_code":     `{"device_code":"d","verification_uri":"https://as/d","expires_in":1}`,
		"no uri":           `{"device_code":"d","user_code":"u","expires_in":1}`,
		"no expires_in":    `{"device_code":"d","user_code":"u","verification_uri":"https://as/d"}`,
		"negative":         `{"device_code":"d","user_code":"u","verification_uri":"https://as/d","expires_in":1,"interval":-1}`,
		"duplicate member": `{"device_code":"d","device_code":"e","user_code":"u","verification_uri":"https://as/d","expires_in":1}`,
		"array":            `[]`,
	} {
		if _, err := ParseDeviceAuthorizationResponse([]byte(body)); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// FuzzParseDeviceAuthorizationResponse: any answer of a device
// authorization endpoint is a response with its required members, or
// ErrMalformed; never a panic.
func FuzzParseDeviceAuthorizationResponse(f *testing.F) {
	f.Add([]byte(`{"device_code":"d","user_code":"BCDF-GHJK","verification_uri":"https://as/device","expires_in":600,"interval":5}`))
	f.Add([]byte(`{"device_code":"d","user_code":"u","verification_url":"https://as/d","expires_in":1}`))
	f.Add([]byte(`{"device_code":"","expires_in":-1}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := ParseDeviceAuthorizationResponse(data)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error outside ErrMalformed: %v", err)
			}
			return
		}
		if r.DeviceCode == "" || r.UserCode == "" || r.VerificationURI == "" || r.ExpiresIn <= 0 || r.Interval < 0 {
			t.Fatalf("accepted without its required members: %+v", r)
		}
	})
}
