-- The OpenID Connect identity a member signs in with (issuer and `sub`), recorded when they join through the
-- provider or link it while signed in. OIDC sign-in finds members by it, never by email: an email typed when
-- accepting an invitation proves nothing, so it must not let whoever controls it at the provider in.
ALTER TABLE members ADD COLUMN oidc_issuer TEXT;
ALTER TABLE members ADD COLUMN oidc_subject TEXT;
CREATE UNIQUE INDEX members_oidc_identity ON members(oidc_issuer, oidc_subject) WHERE oidc_subject IS NOT NULL;
