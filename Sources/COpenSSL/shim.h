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

// Macros and expression constants Swift cannot import (NOTES-libevent-openssl.md).
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
#endif
