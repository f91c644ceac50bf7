import COpenSSL
import Glibc
import SidecarCrypto
import XCTest

@testable import SidecarACME

final class ACMELifecycleTests: XCTestCase {
    func testBackoffDoublesToAnHourAndHonoursRetryAfter() {
        XCTAssertEqual(RenewalSchedule.backoffSeconds(failures: 1, retryAfter: nil), 10)
        XCTAssertEqual(RenewalSchedule.backoffSeconds(failures: 2, retryAfter: nil), 20)
        XCTAssertEqual(RenewalSchedule.backoffSeconds(failures: 9, retryAfter: nil), 2560)
        XCTAssertEqual(RenewalSchedule.backoffSeconds(failures: 50, retryAfter: nil), 3600)
        XCTAssertEqual(RenewalSchedule.backoffSeconds(failures: 1, retryAfter: 7200), 7200)
        XCTAssertEqual(RenewalSchedule.backoffSeconds(failures: 5, retryAfter: 1), 160)
    }

    func testSelfSignedCertificateSummaryAndTwoThirds() throws {
        let key = try CertificateKeyType.ecdsa.generatePEM()
        let pem = try SelfSignedCertificate.pem(domain: "app.example.com", keyPEM: key, days: 3)
        let summary = try XCTUnwrap(CertificateSummary(pem: pem, domains: ["app.example.com"]))
        XCTAssertEqual(summary.notAfter - summary.notBefore, 3 * 86_400 + 3600)
        XCTAssertEqual(summary.twoThirdsPoint, summary.notBefore + (3 * 86_400 + 3600) * 2 / 3)
        XCTAssertTrue(summary.isUsable(now: Int64(time(nil))))
        XCTAssertFalse(summary.isUsable(now: summary.notAfter))
        XCTAssertFalse(try XCTUnwrap(CertificateSummary(pem: pem, domains: ["other.example.com"])).namesEveryDomain)
        XCTAssertNil(CertificateSummary(pem: "garbage", domains: []))
    }

    func testCSRNamesEveryDomainAndIsSignedByTheKey() throws {
        for type in CertificateKeyType.allCases {
            let key = try type.generatePEM()
            let der = try CertificateRequest.der(domains: ["a.example.com", "b.example.com"], keyPEM: key)
            let request = try der.withUnsafeBufferPointer { buffer -> OpaquePointer in
                var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
                return try XCTUnwrap(d2i_X509_REQ(nil, &cursor, der.count))
            }
            defer { X509_REQ_free(request) }
            let publicKey = try XCTUnwrap(X509_REQ_get0_pubkey(request))
            XCTAssertEqual(X509_REQ_verify(request, publicKey), 1)
        }
        XCTAssertThrowsError(try CertificateRequest.der(domains: ["a.example.com,DNS:evil.example"],
                                                        keyPEM: try CertificateKeyType.ecdsa.generatePEM()))
    }

    func testTLSALPNCertificateCarriesTheCriticalACMEIdentifier() throws {
        let key = try CertificateKeyType.ecdsa.generatePEM()
        let digest = SHA256.hash(Array("token.thumb".utf8))
        let pem = try SelfSignedCertificate.pem(domain: "app.example.com", keyPEM: key, days: 1, acmeIdentifier: digest)
        let cert = try XCTUnwrap(OpenSSLObjects.leaf(pem: pem))
        defer { X509_free(cert) }
        let object = try XCTUnwrap(OBJ_txt2obj(SelfSignedCertificate.acmeIdentifierOID, 1))
        defer { ASN1_OBJECT_free(object) }
        let index = X509_get_ext_by_OBJ(cert, object, -1)
        XCTAssertGreaterThanOrEqual(index, 0)
        let ext = try XCTUnwrap(X509_get_ext(cert, index))
        XCTAssertEqual(X509_EXTENSION_get_critical(ext), 1)
        let data = try XCTUnwrap(X509_EXTENSION_get_data(ext))
        let bytes = Array(UnsafeBufferPointer(start: ASN1_STRING_get0_data(data), count: Int(ASN1_STRING_length(data))))
        XCTAssertEqual(bytes, [0x04, 0x20] + digest)
    }

    func testDirectoryStorageWritesOwnerOnlyFiles() throws {
        let dir = NSTemporaryDirectory() + "acme-store-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let storage = try DirectoryStorage(directory: dir, caHost: "ca.test_14000", name: "app.example.com")
        XCTAssertNil(try storage.certificate())
        try storage.saveAccountKey("KEY")
        try storage.saveCertificate(StoredCertificate(chainPEM: "CHAIN", keyPEM: "PRIVATE"))
        XCTAssertEqual(try storage.accountKey(), "KEY")
        XCTAssertEqual(try storage.certificate(), StoredCertificate(chainPEM: "CHAIN", keyPEM: "PRIVATE"))
        var info = stat()
        for path in [dir, storage.servedFiles.certificate, storage.servedFiles.key] {
            XCTAssertEqual(stat(path, &info), 0)
            XCTAssertEqual(info.st_mode & 0o077, 0, path)
        }
        XCTAssertEqual(DirectoryStorage.safe("../x/y"), ".._x_y")
    }
}
