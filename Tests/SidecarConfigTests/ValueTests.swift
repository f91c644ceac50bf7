import XCTest
import SidecarConfig
import SidecarHTTP
import SidecarRESP
import SidecarStore

/// Valid and invalid tables for each kind of value, through the public parsers and through YAML.
final class ValueTests: XCTestCase {
    /// The error for `key: value` appended to the minimal config (nil when it loads).
    private func error(_ line: String) throws -> ConfigError? {
        let directory = try Fixture.directory(self)
        do {
            _ = try Config.parse(yaml: minimal(plus: line + "\n"), environment: Fixture.environment, baseDirectory: directory)
            return nil
        } catch {
            return error.errors.first
        }
    }

    private func config(_ lines: String) throws -> Config { try parse(minimal(plus: lines + "\n")) }

    /// The minimal config with `old` replaced by `new`.
    private func replacing(_ old: String, with new: String) -> String {
        precondition(Fixture.minimal.contains(old))
        return Fixture.minimal.replacingOccurrences(of: old, with: new)
    }

    func testDurations() {
        let valid: [(String, Int64)] = [
            ("90s", 90_000), ("15m", 900_000), ("24h", 86_400_000), ("7d", 604_800_000), ("500ms", 500),
            ("1h30m", 5_400_000), ("1m30s", 90_000), ("2d12h", 216_000_000), ("0", 0), ("0s", 0),
        ]
        for (text, milliseconds) in valid {
            XCTAssertEqual(TimeSpan(parsing: text)?.milliseconds, milliseconds, text)
        }
        let invalid = ["10x", "", "s", "10", "1.5h", "-5s", " 5s", "5s ", "30m1h", "1h1h", "5 s", "5S",
                       "99999999999999999999d", "9999999999999999d", "ms"]
        for text in invalid { XCTAssertNil(TimeSpan(parsing: text), text) }
    }

    func testDurationDescriptionRoundTrips() {
        for text in ["90s", "15m", "1h30m", "7d", "500ms", "1m0s500ms"] {
            guard let span = TimeSpan(parsing: text) else { return XCTFail(text) }
            XCTAssertEqual(TimeSpan(parsing: span.description), span)
        }
        XCTAssertEqual(TimeSpan.seconds(90).description, "1m30s")
        XCTAssertEqual(TimeSpan(milliseconds: 0).description, "0s")
    }

    func testDurationsInConfig() throws {
        XCTAssertEqual(try config("limits:\n  header_timeout: 500ms").limits.headerTimeout, TimeSpan(milliseconds: 500))
        XCTAssertEqual(try error("upstream_timeout: 0")?.message, "must be longer than 0 (use e.g. 90s, 15m, 24h, 7d)")
        XCTAssertEqual(try error("upstream_timeout: 60")?.message, #"invalid duration "60" (use e.g. 90s, 15m, 24h, 7d)"#)
        XCTAssertNil(try parse(replacing("session:\n", with: "session:\n  revalidate: 0\n")).session.revalidate,
                     "0 disables revalidation")
    }

    func testByteSizes() {
        let valid: [(String, Int)] = [
            ("0", 0), ("512", 512), ("16KiB", 16_384), ("10MiB", 10_485_760), ("1GiB", 1_073_741_824),
            ("1KB", 1000), ("2MB", 2_000_000), ("100B", 100),
        ]
        for (text, bytes) in valid { XCTAssertEqual(ByteSize.parse(text), bytes, text) }
        for text in ["", "16 KiB", "16kib", "-1", "1.5MiB", "KiB", "16K", "99999999999999999999", "9999999999999GiB"] {
            XCTAssertNil(ByteSize.parse(text), text)
        }
    }

    func testByteSizesInConfig() throws {
        let limits = try config("limits:\n  max_header_bytes: 32KiB\n  max_body_bytes: 2MiB\n  max_upload_bytes: 100MiB").limits
        XCTAssertEqual(limits.maxHeaderBytes, 32_768)
        XCTAssertEqual(limits.maxBodyBytes, 2_097_152)
        XCTAssertEqual(limits.maxUploadBytes, 104_857_600)
        XCTAssertEqual(try error("limits:\n  max_body_bytes: lots")?.message,
                       #"invalid size "lots" (use e.g. 512, 16KiB, 10MiB)"#)
        XCTAssertEqual(try error("limits:\n  max_header_bytes: 100")?.message, #""100" is out of range (1KiB–1MiB)"#)
    }

    func testListenAddresses() throws {
        let valid: [(String, ListenAddress)] = [
            ("0.0.0.0:8080", .tcp(host: "0.0.0.0", port: 8080)),
            ("[::1]:8080", .tcp(host: "::1", port: 8080)),
            ("[::]:443", .tcp(host: "::", port: 443)),
            ("localhost:80", .tcp(host: "localhost", port: 80)),
            ("127.0.0.1:0", .tcp(host: "127.0.0.1", port: 0)),
            ("unix:/run/sidecar.sock", .unix(path: "/run/sidecar.sock")),
        ]
        for (text, address) in valid {
            XCTAssertEqual(try config("admin:\n  listen: \"\(text)\"").admin.listen, address, text)
        }
        let invalid: [(String, String)] = [
            (":8080", #"listen address ":8080" has no host (use 0.0.0.0:8080 for every interface)"#),
            ("8080", #"listen address "8080" has no port (use host:port, e.g. 127.0.0.1:8080)"#),
            ("[::1]", #"listen address "[::1]" has no port (use host:port, e.g. 127.0.0.1:8080)"#),
            ("127.0.0.1:65536", #"invalid port "65536" in "127.0.0.1:65536" (0-65535)"#),
            ("::1:8080", #"invalid listen address "::1:8080" (use host:port, [::1]:port or unix:/path)"#),
            ("1.2.3:80", #"invalid host "1.2.3" in listen address "1.2.3:80""#),
            ("unix:", "unix: needs a socket path, e.g. unix:/run/app.sock"),
            ("unix:/" + String(repeating: "a", count: 120), ""),
        ]
        for (text, message) in invalid {
            let found = try errors(replacing("listen: 0.0.0.0:8080", with: "listen: \"\(text)\"")).first
            XCTAssertEqual(found?.path, "listen", text)
            if !message.isEmpty { XCTAssertEqual(found?.message, message, text) }
        }
    }

    func testUpstreams() throws {
        let valid: [(String, Upstream)] = [
            ("http://127.0.0.1:3000", .http(host: "127.0.0.1", port: 3000, basePath: "")),
            ("http://app:3000/base/", .http(host: "app", port: 3000, basePath: "/base")),
            ("http://[::1]:3000/a/b", .http(host: "::1", port: 3000, basePath: "/a/b")),
            ("http://my_app", .http(host: "my_app", port: 80, basePath: "")),
            ("HTTP://App.Internal:8000", .http(host: "app.internal", port: 8000, basePath: "")),
            ("unix:/run/app.sock", .unix(path: "/run/app.sock")),
            ("https://127.0.0.1:3000", .https(host: "127.0.0.1", port: 3000, basePath: "")),
            ("HTTPS://App.Internal/base", .https(host: "app.internal", port: 443, basePath: "/base")),
        ]
        for (text, upstream) in valid {
            XCTAssertEqual(try parse(replacing("upstream: http://127.0.0.1:3000", with: "upstream: \"\(text)\"")).upstream,
                           upstream, text)
        }
        for text in ["ftp://host", "wss://host", "127.0.0.1:3000", "http://x:0", "http://x:3000?q=1",
                     "http://user@x:3000", "http://x:3000#f", "http://", "http://bad host", "unix:"] {
            let found = try errors(replacing("upstream: http://127.0.0.1:3000", with: "upstream: \"\(text)\"")).first
            XCTAssertEqual(found?.path, "upstream", text)
            XCTAssertEqual(found?.line, 3, text)
            XCTAssertEqual(found?.column, 11, text)
        }
    }

    func testUnixUpstreamRelativeToConfigDirectory() throws {
        let directory = try Fixture.directory(self)
        let yaml = Fixture.minimal.replacingOccurrences(of: "upstream: http://127.0.0.1:3000", with: "upstream: unix:app.sock")
        let config = try Config.parse(yaml: yaml, environment: Fixture.environment, baseDirectory: directory)
        XCTAssertEqual(config.upstream, .unix(path: directory + "/app.sock"))
    }

    func testCIDRs() throws {
        let valid: [(String, String)] = [
            ("10.0.0.0/8", "10.0.0.0/8"), ("192.168.1.7", "192.168.1.7/32"), ("fd00::/8", "fd00::/8"),
            ("::1", "::1/128"), ("0.0.0.0/0", "0.0.0.0/0"), ("::/0", "::/0"), ("2001:DB8::/32", "2001:db8::/32"),
        ]
        for (text, normalized) in valid { XCTAssertEqual(CIDR(text)?.description, normalized, text) }
        for text in ["10.0.0.1/8", "10.0.0.0/33", "fd00::/129", "10.0.0/8", "010.0.0.0/8", "abc", "10.0.0.0/",
                     "10.0.0.0/-1", "10.0.0.0/8/8", "fe80::1%eth0", ""] {
            XCTAssertNil(CIDR(text), text)
        }
        XCTAssertEqual(try error("trusted_proxies: [10.0.0.1/8]")?.message,
                       #""10.0.0.1/8" has host bits set (did you mean "10.0.0.0/8"?)"#)
        XCTAssertEqual(try error("trusted_proxies: [10.0.0.0/33]")?.message,
                       #"invalid CIDR "10.0.0.0/33" (use e.g. 10.0.0.0/8, 192.168.1.7 or fd00::/8)"#)
        XCTAssertEqual(try config("trusted_proxies: [10.0.0.0/8, \"fd00::/8\"]").trustedProxies.map(\.description),
                       ["10.0.0.0/8", "fd00::/8"])
    }

    func testCIDRMembership() throws {
        let block = try XCTUnwrap(CIDR("10.0.0.0/8"))
        XCTAssertTrue(block.contains(try XCTUnwrap(IPAddress("10.1.2.3"))))
        XCTAssertFalse(block.contains(try XCTUnwrap(IPAddress("11.0.0.1"))))
        XCTAssertTrue(block.contains(try XCTUnwrap(IPAddress("::ffff:10.1.2.3"))), "IPv4-mapped IPv6 peer")
        XCTAssertFalse(block.contains(try XCTUnwrap(IPAddress("::1"))))
        let v6 = try XCTUnwrap(CIDR("fd00::/8"))
        XCTAssertTrue(v6.contains(try XCTUnwrap(IPAddress("fd12:3456::1"))))
        XCTAssertFalse(v6.contains(try XCTUnwrap(IPAddress("fe80::1"))))
        XCTAssertFalse(v6.contains(try XCTUnwrap(IPAddress("10.0.0.1"))))
        let odd = try XCTUnwrap(CIDR("2001:db8:8000::/33"))
        XCTAssertTrue(odd.contains(try XCTUnwrap(IPAddress("2001:db8:ffff::1"))))
        XCTAssertFalse(odd.contains(try XCTUnwrap(IPAddress("2001:db8:7fff::1"))))
        let host = try XCTUnwrap(CIDR("2001:db8::1/128"))
        XCTAssertTrue(host.contains(try XCTUnwrap(IPAddress("2001:db8::1"))))
        XCTAssertFalse(host.contains(try XCTUnwrap(IPAddress("2001:db8::2"))))
        XCTAssertTrue(try XCTUnwrap(CIDR("0.0.0.0/0")).contains(try XCTUnwrap(IPAddress("203.0.113.9"))))
        XCTAssertEqual(IPAddress(bytes: [192, 168, 0, 1]), IPAddress("192.168.0.1"))
        XCTAssertEqual(IPAddress("2001:db8::1")?.description, "2001:db8::1")
        XCTAssertEqual(IPAddress("192.168.0.1")?.description, "192.168.0.1")
    }

    private func publicURL(_ text: String) throws -> HTTPURL {
        try parse(Fixture.minimal.replacingOccurrences(of: "https://app.example.com", with: text)).publicURL
    }

    private func publicURLError(_ text: String) throws -> ConfigError? {
        try errors(Fixture.minimal.replacingOccurrences(of: "https://app.example.com", with: "\"\(text)\"")).first
    }

    func testPublicURLs() throws {
        XCTAssertEqual(try publicURL("https://app.example.com/").origin, "https://app.example.com")
        XCTAssertEqual(try publicURL("HTTPS://App.Example.COM:8443").origin, "https://app.example.com:8443")
        XCTAssertEqual(try publicURL("https://app.example.com:443").origin, "https://app.example.com")
        XCTAssertEqual(try publicURL("http://localhost:8080").origin, "http://localhost:8080")
        XCTAssertEqual(try publicURL("http://127.0.0.1:8080").authority, "127.0.0.1:8080")
        XCTAssertEqual(try publicURL("http://[::1]:8080").origin, "http://[::1]:8080")
        let invalid: [(String, String)] = [
            ("https://app.example.com/path", #""https://app.example.com/path" must not have a path (only scheme, host and port)"#),
            ("https://app.example.com?x=1", #""https://app.example.com?x=1" must not have a ?query"#),
            ("https://user:pw@app.example.com", #""https://***@app.example.com" must not contain user:password@"#),
            ("https://app.example.com#top", #""https://app.example.com#top" must not have a #fragment"#),
            ("ftp://app.example.com", #""ftp://app.example.com" must use http or https"#),
            ("app.example.com", #""app.example.com" is not an absolute URL (e.g. https://app.example.com)"#),
            ("https://", #""https://" has no valid host"#),
            ("https://exa mple.com", #""https://exa mple.com" contains spaces, control or non-ASCII characters"#),
            ("https://app.example.com:99999", #""https://app.example.com:99999" has an invalid port "99999" (1-65535)"#),
            ("https://-bad-.com", #""https://-bad-.com" has an invalid host "-bad-.com""#),
        ]
        for (text, message) in invalid {
            let found = try publicURLError(text)
            XCTAssertEqual(found?.path, "public_url", text)
            XCTAssertEqual(found?.message, message, text)
            XCTAssertEqual(found?.line, 2, text)
            XCTAssertEqual(found?.column, 13, text)
        }
    }

    func testAppleBaseURL() throws {
        let key = "  private_key_file: AuthKey.p8\n"
        XCTAssertEqual(try parse(replacing(key, with: key + "  base_url: http://127.0.0.1:9999/\n")).apple.baseURL.description,
                       "http://127.0.0.1:9999")
        XCTAssertEqual(try parse(replacing(key, with: key + "  base_url: https://emulator.test/apple\n")).apple.baseURL.description,
                       "https://emulator.test/apple")
        let error = try errors(replacing(key, with: key + "  base_url: http://apple.test\n")).first
        XCTAssertEqual(error?.path, "apple.base_url")
        XCTAssertEqual(error?.line, 9)
        XCTAssertEqual(error?.column, 13)
        XCTAssertEqual(error?.message, #""http://apple.test" must be https unless its host is loopback"#)
    }

    func testWorkers() throws {
        XCTAssertEqual(try config("workers: 4").workers, 4)
        XCTAssertGreaterThanOrEqual(try config("workers: auto").workers, 1)
        XCTAssertEqual(try error("workers: 0")?.message, "0 is out of range (1–256)")
        XCTAssertEqual(try error("workers: 257")?.message, "257 is out of range (1–256)")
        XCTAssertEqual(try error("workers: many")?.message, #"expected a whole number, found "many""#)
    }

    func testSessionCacheEntries() throws {
        XCTAssertEqual(try config("").session.cacheEntries, 8192)
        let session = { (value: String) in self.replacing("session:\n", with: "session:\n  cache_entries: \(value)\n") }
        XCTAssertEqual(try parse(session("32768")).session.cacheEntries, 32768)
        XCTAssertEqual(try parse(session("16")).session.cacheEntries, 16)
        let tooSmall = try XCTUnwrap(errors(session("8")).first)
        XCTAssertEqual(tooSmall.message, "8 is out of range (16–4194304)")
        XCTAssertEqual(tooSmall.path, "session.cache_entries")
        XCTAssertEqual(tooSmall.file, "sidecar.yaml")
        XCTAssertEqual(tooSmall.line, 10)
        XCTAssertNotNil(tooSmall.column)
        XCTAssertEqual(try errors(session("5000000")).first?.message, "5000000 is out of range (16–4194304)")
        XCTAssertEqual(try errors(session("lots")).first?.message, #"expected a whole number, found "lots""#)
    }

    func testHeaderNames() throws {
        let headers = try config("headers:\n  user_id: X-User\n  strip: [X-Debug, Remote-User]\n  pass_cookie: true").headers
        XCTAssertEqual(headers.userID, "X-User")
        XCTAssertEqual(headers.strip, ["X-Debug", "Remote-User"])
        XCTAssertTrue(headers.passCookie)
        XCTAssertEqual(try error("headers:\n  email: \"X Email\"")?.message,
                       #"invalid header name "X Email" (letters, digits and !#$%&'*+-.^_`|~ only)"#)
        XCTAssertEqual(try error("headers:\n  email: \"X-Email:\"")?.path, "headers.email")
        XCTAssertEqual(try error("headers:\n  strip: [\"Bad\\r\\nHeader\"]")?.path, "headers.strip[0]")
        XCTAssertEqual(try error("headers:\n  name: Authorization")?.message,
                       #""Authorization" is managed by the sidecar and cannot carry identity"#)
        XCTAssertEqual(try error("headers:\n  strip: [Content-Length]")?.message,
                       #""Content-Length" frames the request and cannot be stripped"#)
    }

    func testAccessLists() throws {
        let access = try config("""
            access:
              allowed_emails: [Alice@Example.com]
              allowed_email_domains: [Corp.Example.com]
              allowed_subjects: ["000123.abc"]
              allow_private_relay: false
              public_paths: [/healthz, "/static/**"]
              api_paths: ["/api/**"]
              allowed_redirect_hosts: [docs.example.com, "admin.example.com:8443"]
            """).access
        XCTAssertEqual(access.allowedEmails, ["alice@example.com"])
        XCTAssertEqual(access.allowedEmailDomains, ["corp.example.com"])
        XCTAssertEqual(access.allowedSubjects, ["000123.abc"])
        XCTAssertFalse(access.allowPrivateRelay)
        XCTAssertEqual(access.publicPaths, ["/healthz", "/static/**"])
        XCTAssertEqual(access.apiPaths, ["/api/**"])
        XCTAssertEqual(access.allowedRedirectHosts.map(\.description), ["docs.example.com:443", "admin.example.com:8443"])

        XCTAssertEqual(try error("access:\n  allowed_email_domains: [\"@corp.com\"]")?.message,
                       #""@corp.com": write the domain without @, e.g. "corp.com""#)
        XCTAssertEqual(try error("access:\n  allowed_emails: [\"a@evil.com@corp.com\"]")?.message,
                       #"invalid email address "a@evil.com@corp.com""#)
        XCTAssertEqual(try error("access:\n  public_paths: [\"static/*\"]")?.message,
                       #"path pattern "static/*" must start with /"#)
        XCTAssertEqual(try error("access:\n  allowed_redirect_hosts: [\"https://x.com\"]")?.message,
                       #"invalid redirect host "https://x.com" (host or host:port, no scheme)"#)
    }

    func testEnumerationsAndBooleans() throws {
        let log = try config("log:\n  format: text\n  level: debug\n  access: false\n  pii: true").log
        XCTAssertEqual(log.format, .text)
        XCTAssertEqual(log.level, .debug)
        XCTAssertFalse(log.access)
        XCTAssertTrue(log.pii)
        XCTAssertEqual(try error("log:\n  format: xml")?.message, #"invalid value "xml" (one of: json, text)"#)
        XCTAssertEqual(try error("log:\n  pii: yes")?.message, #"expected true or false, found "yes""#)
    }

    func testRevocationStores() throws {
        XCTAssertEqual(try config("revocations:\n  store: redis://cache:6380/2").revocations.store,
                       .redis(RedisAddress(host: "cache", port: 6380, database: 2)))
        XCTAssertEqual(try config("revocations:\n  store: redis://cache").revocations.store,
                       .redis(RedisAddress(host: "cache", port: 6379)))
        XCTAssertEqual(try config("revocations:\n  store: file:/var/lib/sidecar/revoked").revocations.store,
                       .file(path: "/var/lib/sidecar/revoked"))
        XCTAssertEqual(try error("revocations:\n  store: sqlite")?.message,
                       #"invalid store "sqlite" (memory, file:/path, redis://host:port/db, rediss://host:port/db, "#
                           + #"redis+sentinel://host:port,host:port/master/db or rediss+sentinel://…)"#)
        XCTAssertEqual(try error("revocations:\n  store: redis://user:pw@cache")?.message,
                       "redis address must not carry credentials; set revocations.password (env:NAME or file:/path)")
        XCTAssertEqual(try config("revocations:\n  store: rediss://cache.internal:6390/1").revocations.store,
                       .redis(RedisAddress(host: "cache.internal", port: 6390, database: 1, tls: true)))
        let withPassword = try parse(
            minimal(plus: "revocations:\n  store: redis://cache\n  password: env:REDIS_PW\n  key_prefix: \"app1:\"\n"),
            environment: Fixture.environment.merging(["REDIS_PW": "s3cret"]) { $1 })
        XCTAssertEqual(withPassword.revocations.password?.string, "s3cret")
        XCTAssertEqual(withPassword.revocations.keyPrefix, "app1:")
        XCTAssertEqual(try error("revocations:\n  store: redis://cache\n  key_prefix: has space")?.message,
                       "key_prefix must be at most 64 visible characters without spaces")
    }

    func testNotificationsAndRoutes() throws {
        let loaded = try config("notifications:\n  forward_to: http://127.0.0.1:3000/hooks/apple\nroutes:\n  prefix: /_auth")
        XCTAssertEqual(loaded.notifications.forwardTo?.description, "http://127.0.0.1:3000/hooks/apple")
        XCTAssertEqual(loaded.routes.prefix, "/_auth")
        XCTAssertEqual(loaded.redirectURI, "https://app.example.com/_auth/callback")
        for prefix in ["/", "auth", "/.auth/", "/a*", "/a/../b", "//x"] {
            XCTAssertEqual(try error("routes:\n  prefix: \"\(prefix)\"")?.path, "routes.prefix", prefix)
        }
    }
}
