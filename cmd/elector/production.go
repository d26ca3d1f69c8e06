package main

// validateProduction checks the auth and proxy settings, naming the key
// at fault. It reads token files and variables to do so.
func (c Config) validateProduction(source func(string) string) error {
	if _, err := c.Auth.apiTokens(); err != nil {
		return configError("auth.tokens", source("auth.tokens"), "%v", err)
	}
	if _, err := parseTrustedProxies(c.TrustedProxies); err != nil {
		return configError("http.trusted_proxies", source("http.trusted_proxies"), "%v", err)
	}
	return nil
}
