#ifndef SIDECAR_COPENSSL_SHIM_H
#define SIDECAR_COPENSSL_SHIM_H
#include <sys/types.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/core_names.h>
#include <openssl/param_build.h>
#include <openssl/kdf.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <openssl/crypto.h>
#include <openssl/pem.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/ecdsa.h>
#include <openssl/rsa.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

// Macros and expression constants Swift cannot import, as static inline functions it can.
static inline long sidecar_BIO_get_mem_data(BIO *b, char **pp) { return BIO_get_mem_data(b, pp); }
static inline void sidecar_OPENSSL_free(void *p) { OPENSSL_free(p); }
static inline int sidecar_EVP_PKEY_PUBLIC_KEY(void) { return EVP_PKEY_PUBLIC_KEY; }
static inline int sidecar_EVP_PKEY_KEYPAIR(void) { return EVP_PKEY_KEYPAIR; }
// OSSL_PARAM_BLD keeps parameter names by pointer: hand out the C literals themselves.
static inline const char *sidecar_param_rsa_n(void) { return OSSL_PKEY_PARAM_RSA_N; }
static inline const char *sidecar_param_rsa_e(void) { return OSSL_PKEY_PARAM_RSA_E; }
static inline const char *sidecar_param_pub_key(void) { return OSSL_PKEY_PARAM_PUB_KEY; }
static inline const char *sidecar_param_group_name(void) { return OSSL_PKEY_PARAM_GROUP_NAME; }
// EVP_KDF parameter names (OSSL_PARAM keeps the name by pointer, like OSSL_PARAM_BLD).
static inline const char *sidecar_kdf_param_digest(void) { return OSSL_KDF_PARAM_DIGEST; }
static inline const char *sidecar_kdf_param_key(void) { return OSSL_KDF_PARAM_KEY; }
static inline const char *sidecar_kdf_param_salt(void) { return OSSL_KDF_PARAM_SALT; }
static inline const char *sidecar_kdf_param_info(void) { return OSSL_KDF_PARAM_INFO; }
// TLS helpers for the Apple client.
static inline long sidecar_SSL_set_tlsext_host_name(SSL *s, const char *name) { return SSL_set_tlsext_host_name(s, name); }
static inline int sidecar_SSL_CTX_set_min_proto_version(SSL_CTX *c, int v) { return (int)SSL_CTX_set_min_proto_version(c, v); }
static inline long sidecar_SSL_CTX_set_mode(SSL_CTX *c, long m) { return SSL_CTX_set_mode(c, m); }
static inline uint64_t sidecar_SSL_OP_IGNORE_UNEXPECTED_EOF(void) { return SSL_OP_IGNORE_UNEXPECTED_EOF; }
// TLS helpers for serving HTTPS (SidecarEvent's TLSServerContext).
static inline long sidecar_SSL_CTX_set_dh_auto(SSL_CTX *c, int onoff) { return SSL_CTX_set_dh_auto(c, onoff); }
static inline int sidecar_SSL_CTX_set1_groups_list(SSL_CTX *c, const char *list) { return (int)SSL_CTX_set1_groups_list(c, list); }
static inline void sidecar_SSL_CTX_set_read_ahead(SSL_CTX *c, int yes) { SSL_CTX_set_read_ahead(c, yes); }
static inline uint64_t sidecar_SSL_OP_server(void) {
    return SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION | SSL_OP_IGNORE_UNEXPECTED_EOF;
}
static inline long sidecar_SSL_MODE_server(void) {
    return SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_RELEASE_BUFFERS;
}
// A plain-HTTP request on the TLS port (OpenSSL recognizes it from the first bytes).
static inline int sidecar_is_http_request_error(unsigned long e) {
    return ERR_GET_LIB(e) == ERR_LIB_SSL && (ERR_GET_REASON(e) == SSL_R_HTTP_REQUEST || ERR_GET_REASON(e) == SSL_R_HTTPS_PROXY_REQUEST);
}
// ALPN: the sidecar speaks HTTP/1.1 only; a client offering other protocols only gets none.
static int sidecar_alpn_select_http11(SSL *s, const unsigned char **out, unsigned char *outlen,
                                      const unsigned char *in, unsigned int inlen, void *arg) {
    static const unsigned char http11[] = { 8, 'h', 't', 't', 'p', '/', '1', '.', '1' };
    (void)s; (void)arg;
    if (SSL_select_next_proto((unsigned char **)out, outlen, http11, sizeof http11, in, inlen) == OPENSSL_NPN_NEGOTIATED)
        return SSL_TLSEXT_ERR_OK;
    return SSL_TLSEXT_ERR_NOACK;
}
static inline void sidecar_SSL_CTX_select_http11(SSL_CTX *c) { SSL_CTX_set_alpn_select_cb(c, sidecar_alpn_select_http11, NULL); }
// ALPN with HTTP/2 on: `h2` when the client offers it, else `http/1.1` (the server's order).
static int sidecar_alpn_select_h2(SSL *s, const unsigned char **out, unsigned char *outlen,
                                  const unsigned char *in, unsigned int inlen, void *arg) {
    static const unsigned char h2[] = { 2, 'h', '2' };
    static const unsigned char http11[] = { 8, 'h', 't', 't', 'p', '/', '1', '.', '1' };
    (void)s; (void)arg;
    if (SSL_select_next_proto((unsigned char **)out, outlen, h2, sizeof h2, in, inlen) == OPENSSL_NPN_NEGOTIATED)
        return SSL_TLSEXT_ERR_OK;
    if (SSL_select_next_proto((unsigned char **)out, outlen, http11, sizeof http11, in, inlen) == OPENSSL_NPN_NEGOTIATED)
        return SSL_TLSEXT_ERR_OK;
    return SSL_TLSEXT_ERR_NOACK;
}
static inline void sidecar_SSL_CTX_select_h2(SSL_CTX *c) { SSL_CTX_set_alpn_select_cb(c, sidecar_alpn_select_h2, NULL); }
static inline int sidecar_password_declined(char *buf, int size, int rwflag, void *u) { (void)buf; (void)size; (void)rwflag; (void)u; return 0; }
static inline void sidecar_SSL_CTX_decline_passwords(SSL_CTX *c) { SSL_CTX_set_default_passwd_cb(c, sidecar_password_declined); }
// ACME (SidecarACME): a CSR's requested extensions (STACK_OF macros do not import).
static inline int sidecar_X509_REQ_add_extension(X509_REQ *req, X509_EXTENSION *ext) {
    STACK_OF(X509_EXTENSION) *exts = sk_X509_EXTENSION_new_null();
    if (exts == NULL) return 0;
    int ok = sk_X509_EXTENSION_push(exts, ext) > 0 && X509_REQ_add_extensions(req, exts) == 1;
    sk_X509_EXTENSION_free(exts);
    return ok;
}
// TLS-ALPN-01 (RFC 8737): a ClientHello whose ALPN list is exactly `acme-tls/1` is answered
// from the challenge context `lookup` returns for its SNI name (a reference the caller owns),
// with that certificate and that protocol only; every other ClientHello is left alone, or,
// before the first certificate is issued, refused.
typedef SSL_CTX *(*sidecar_acme_lookup_fn)(const unsigned char *name, size_t length);
static int sidecar_acme_hello(SSL *s, int *al, sidecar_acme_lookup_fn lookup, int others_refused) {
    static const unsigned char only_acme[] = { 0, 11, 10, 'a', 'c', 'm', 'e', '-', 't', 'l', 's', '/', '1' };
    const unsigned char *alpn, *sni;
    size_t alpn_len, sni_len;
    if (!SSL_client_hello_get0_ext(s, TLSEXT_TYPE_application_layer_protocol_negotiation, &alpn, &alpn_len)
        || alpn_len != sizeof only_acme || memcmp(alpn, only_acme, sizeof only_acme) != 0) {
        *al = SSL_AD_HANDSHAKE_FAILURE;
        return others_refused ? SSL_CLIENT_HELLO_ERROR : SSL_CLIENT_HELLO_SUCCESS;
    }
    *al = SSL_AD_UNRECOGNIZED_NAME;
    if (!SSL_client_hello_get0_ext(s, TLSEXT_TYPE_server_name, &sni, &sni_len) || sni_len < 5) return SSL_CLIENT_HELLO_ERROR;
    size_t list_len = ((size_t)sni[0] << 8) | sni[1], name_len = ((size_t)sni[3] << 8) | sni[4];
    if (list_len + 2 != sni_len || sni[2] != 0 || name_len + 5 > sni_len || name_len == 0) return SSL_CLIENT_HELLO_ERROR;
    SSL_CTX *challenge = lookup(sni + 5, name_len);
    if (challenge == NULL) return SSL_CLIENT_HELLO_ERROR;
    SSL_CTX *set = SSL_set_SSL_CTX(s, challenge);
    SSL_CTX_free(challenge);
    return set == challenge ? SSL_CLIENT_HELLO_SUCCESS : SSL_CLIENT_HELLO_ERROR;
}
static int sidecar_acme_client_hello(SSL *s, int *al, void *arg) {
    return sidecar_acme_hello(s, al, (sidecar_acme_lookup_fn)arg, 0);
}
// Before the first certificate is issued: only challenge handshakes complete.
static int sidecar_acme_client_hello_only(SSL *s, int *al, void *arg) {
    return sidecar_acme_hello(s, al, (sidecar_acme_lookup_fn)arg, 1);
}
static inline void sidecar_SSL_CTX_answer_acme_tls(SSL_CTX *c, sidecar_acme_lookup_fn lookup, int others_refused) {
    SSL_CTX_set_client_hello_cb(c, others_refused ? sidecar_acme_client_hello_only : sidecar_acme_client_hello, (void *)lookup);
}
static int sidecar_alpn_select_acme(SSL *s, const unsigned char **out, unsigned char *outlen,
                                    const unsigned char *in, unsigned int inlen, void *arg) {
    static const unsigned char acme[] = { 10, 'a', 'c', 'm', 'e', '-', 't', 'l', 's', '/', '1' };
    (void)s; (void)arg;
    if (SSL_select_next_proto((unsigned char **)out, outlen, acme, sizeof acme, in, inlen) == OPENSSL_NPN_NEGOTIATED)
        return SSL_TLSEXT_ERR_OK;
    return SSL_TLSEXT_ERR_ALERT_FATAL;
}
static inline void sidecar_SSL_CTX_select_acme(SSL_CTX *c) { SSL_CTX_set_alpn_select_cb(c, sidecar_alpn_select_acme, NULL); }
// Client-side session cache, kept by the caller (the new-session callback), none inside OpenSSL.
static inline long sidecar_SSL_CTX_cache_client_sessions_outside(SSL_CTX *c) {
    return SSL_CTX_set_session_cache_mode(c, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
}
static inline int sidecar_SSL_set_app_data(SSL *s, void *data) { return SSL_set_app_data(s, data); }
static inline void *sidecar_SSL_get_app_data(const SSL *s) { return SSL_get_app_data(s); }
#endif
