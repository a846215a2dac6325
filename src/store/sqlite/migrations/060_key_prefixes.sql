-- Key prefixes showed the first 10 characters of a key: of a chosen (HANGAR_ADMIN_API_KEY) key that is
-- much of the secret itself. Generated keys keep "hk_" and 4 random characters; a chosen key's prefix,
-- whose last 4 characters cannot be recovered from the hash, becomes "…".
UPDATE api_keys SET prefix = CASE WHEN substr(prefix, 1, 3) = 'hk_' THEN substr(prefix, 1, 7) ELSE '…' END;
