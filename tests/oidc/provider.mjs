// Loopback OpenID Connect provider for end-to-end tests (oidc-provider, see package.json).
//
// Configuration comes from the environment (see tests/oidc/harness.py, which sets it):
//   OIDC_PORT           port on 127.0.0.1; the issuer is http://127.0.0.1:<port>
//   OIDC_CLIENT_ID      the one registered confidential client
//   OIDC_CLIENT_SECRET  its secret (client_secret_basic and client_secret_post both accepted)
//   OIDC_REDIRECT_URI   its redirect URI (plain http on loopback is fine for a "web" client)
//   OIDC_ACCOUNTS       JSON {"<login>": {<claims>}}; the login name is the account id / `sub`
//   OIDC_PASSWORD       the one password every account accepts
//   OIDC_CC_GROUPS      comma-separated `groups` claim put into client-credentials JWTs
//   OIDC_ID_JAG_CLIENTS JSON {"<audience>": "<client id there>"}: the authorization servers the client
//                       may get identity assertions (ID-JAG) for, and the client each names (the policy)
//   OIDC_STEP_UP        comma-separated logins whose exchanges ask for a stronger login
//
// Claims: `groups` is released for the `profile` scope and also for an extra `groups`
// scope; ID tokens carry the scope claims too (conformIdTokenClaims: false).
// Client credentials with a `resource` parameter yield an RS256 JWT access token
// (aud = resource, iss = issuer, client_id, groups).
//
// Token exchange (RFC 8693) for identity assertions, as the MCP enterprise-managed authorization extension
// has an identity provider issue them: the client's user's ID token (still valid) or refresh token in,
// an RS256 JWT of `typ: oauth-id-jag+jwt` out (iss, sub, aud = the audience asked for, client_id from
// OIDC_ID_JAG_CLIENTS, resource, scope, email, jti, a 300 s lifetime). Each exchange is logged on stderr
// as "EXCHANGE <login> <audience> <resource>".
//
// Prints exactly one line "READY <issuer>" on stdout once listening; everything else
// (oidc-provider notices included) goes to stderr. Exits 0 on SIGTERM / SIGINT.

import * as http from 'node:http';
import * as crypto from 'node:crypto';

import Provider from 'oidc-provider';

// oidc-provider writes NOTICEs via console.info (stdout); keep stdout for READY only.
console.info = (...args) => console.error(...args);
console.log = (...args) => console.error(...args);

function required(name) {
  const value = process.env[name];
  if (value === undefined || value === '') {
    console.error(`provider.mjs: missing required environment variable ${name}`);
    process.exit(2);
  }
  return value;
}

const port = Number.parseInt(required('OIDC_PORT'), 10);
const clientId = required('OIDC_CLIENT_ID');
const clientSecret = required('OIDC_CLIENT_SECRET');
const redirectUri = required('OIDC_REDIRECT_URI');
const accounts = JSON.parse(required('OIDC_ACCOUNTS'));
const password = required('OIDC_PASSWORD');
const ccGroups = (process.env.OIDC_CC_GROUPS || '')
  .split(',').map((s) => s.trim()).filter(Boolean);
const idJagClients = JSON.parse(process.env.OIDC_ID_JAG_CLIENTS || '{}');
const stepUp = new Set((process.env.OIDC_STEP_UP || '').split(',').map((s) => s.trim()).filter(Boolean));

const TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
const ID_JAG = 'urn:ietf:params:oauth:token-type:id-jag';
const ID_TOKEN = 'urn:ietf:params:oauth:token-type:id_token';
const REFRESH_TOKEN = 'urn:ietf:params:oauth:token-type:refresh_token';

const issuer = `http://127.0.0.1:${port}`;

// Signing key generated at start; published at <issuer>/jwks.
const { privateKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
const signingJwk = {
  ...privateKey.export({ format: 'jwk' }),
  kid: crypto.randomBytes(8).toString('hex'),
  alg: 'RS256',
  use: 'sig',
};

function htmlEscape(value) {
  return String(value)
    .replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;')
    .replaceAll('"', '&quot;').replaceAll("'", '&#39;');
}

function page(title, body) {
  return `<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>${htmlEscape(title)}</title></head>
<body>
<h1>${htmlEscape(title)}</h1>
${body}
</body></html>
`;
}

async function findAccount(ctx, id) {
  if (!Object.hasOwn(accounts, id)) return undefined;
  return {
    accountId: id,
    async claims() {
      return { ...accounts[id], sub: id };
    },
  };
}

const configuration = {
  clients: [{
    client_id: clientId,
    client_secret: clientSecret,
    redirect_uris: [redirectUri],
    post_logout_redirect_uris: [new URL('/', redirectUri).href],
    application_type: 'web',
    grant_types: ['authorization_code', 'client_credentials', 'refresh_token', TOKEN_EXCHANGE],
    response_types: ['code'],
    token_endpoint_auth_method: 'client_secret_basic', // client_secret_post is accepted as well
  }],
  jwks: { keys: [signingJwk] },
  cookies: { keys: [crypto.randomBytes(32).toString('hex')] },
  findAccount,
  claims: {
    openid: ['sub'],
    profile: [
      'name', 'given_name', 'family_name', 'middle_name', 'nickname', 'preferred_username',
      'profile', 'picture', 'website', 'gender', 'birthdate', 'zoneinfo', 'locale',
      'updated_at', 'groups',
    ],
    email: ['email', 'email_verified'],
    groups: ['groups'],
  },
  // Put the scope-requested claims into the ID token as well, not only into userinfo.
  conformIdTokenClaims: false,
  pkce: { required: () => false },
  features: {
    devInteractions: { enabled: false },
    clientCredentials: { enabled: true },
    introspection: { enabled: true },
    revocation: { enabled: true },
    rpInitiatedLogout: {
      enabled: true,
      async logoutSource(ctx, form) {
        // Plain form; the hidden `logout=yes` makes a scripted submit sign out.
        ctx.body = page('Sign out', form.replace('</form>',
          '<input type="hidden" name="logout" value="yes"/><button type="submit">Sign out</button></form>'));
      },
      async postLogoutSuccessSource(ctx) {
        ctx.body = page('Signed out', '<p>You have been signed out.</p>');
      },
    },
    resourceIndicators: {
      enabled: true,
      // No resource requested -> opaque access token usable at userinfo.
      defaultResource: async (ctx, client, oneOf) => oneOf,
      useGrantedResource: async () => true,
      // Any resource indicator (e.g. urn:mcp-registry) is accepted; the scopes it
      // offers are whatever scopes the request asked for.
      getResourceServerInfo: async (ctx, resourceIndicator) => ({
        scope: ctx.oidc.params?.scope || '',
        audience: resourceIndicator,
        accessTokenTTL: 60 * 60,
        accessTokenFormat: 'jwt',
        jwt: { sign: { alg: 'RS256' } },
      }),
    },
  },
  async extraTokenClaims(ctx, token) {
    if (token.kind === 'ClientCredentials') {
      return { groups: ccGroups };
    }
    if (token.accountId && Object.hasOwn(accounts, token.accountId)) {
      const { groups } = accounts[token.accountId];
      if (groups !== undefined) return { groups };
    }
    return undefined;
  },
  async renderError(ctx, out) {
    ctx.type = 'html';
    ctx.body = page('Error', Object.entries(out)
      .map(([key, value]) => `<p><strong>${htmlEscape(key)}</strong>: ${htmlEscape(value)}</p>`)
      .join('\n'));
  },
  ttl: {
    AccessToken: 60 * 60,
    AuthorizationCode: 60,
    ClientCredentials: 60 * 60,
    IdToken: 60 * 60,
    Interaction: 60 * 60,
    Grant: 24 * 60 * 60,
    Session: 24 * 60 * 60,
    RefreshToken: 24 * 60 * 60,
  },
};

const provider = new Provider(issuer, configuration);

function base64url(value) {
  return Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)).toString('base64url');
}

function signed(header, claims) {
  const input = `${base64url(header)}.${base64url(claims)}`;
  return `${input}.${crypto.sign('sha256', Buffer.from(input), privateKey).toString('base64url')}`;
}

function refuse(ctx, error, description) {
  ctx.status = 400;
  ctx.set('cache-control', 'no-store');
  ctx.body = { error, error_description: description };
}

async function subjectOf(ctx) {
  const { params, client } = ctx.oidc;
  if (params.subject_token_type === ID_TOKEN) {
    try {
      const { payload } = await provider.IdToken.validate(params.subject_token, client);
      return payload.exp > Math.floor(Date.now() / 1000) ? payload.sub : undefined;
    } catch {
      return undefined;
    }
  }
  if (params.subject_token_type === REFRESH_TOKEN) {
    const token = await provider.RefreshToken.find(params.subject_token);
    return token && !token.isExpired && token.clientId === client.clientId ? token.accountId : undefined;
  }
  return undefined;
}

provider.registerGrantType(TOKEN_EXCHANGE, async (ctx) => {
  const { params, client } = ctx.oidc;
  if (params.requested_token_type !== ID_JAG) {
    return refuse(ctx, 'invalid_request', 'only identity assertions (ID-JAG) are issued here');
  }
  const login = await subjectOf(ctx);
  if (login === undefined || !Object.hasOwn(accounts, login)) {
    return refuse(ctx, 'invalid_grant', 'the subject token is not a valid login of this client');
  }
  if (stepUp.has(login)) {
    return refuse(ctx, 'insufficient_user_authentication', 'a stronger login is required');
  }
  const named = idJagClients[params.audience];
  if (named === undefined) {
    return refuse(ctx, 'invalid_target', `no policy lets ${client.clientId} reach ${params.audience}`);
  }
  const now = Math.floor(Date.now() / 1000);
  const claims = {
    iss: issuer,
    sub: login,
    aud: params.audience,
    client_id: named,
    jti: crypto.randomBytes(16).toString('hex'),
    iat: now,
    exp: now + 300,
    ...(params.resource ? { resource: params.resource } : {}),
    ...(params.scope ? { scope: params.scope } : {}),
    ...(accounts[login].email ? { email: accounts[login].email } : {}),
  };
  console.error(`EXCHANGE ${login} ${params.audience} ${params.resource || ''}`);
  ctx.set('cache-control', 'no-store');
  ctx.body = {
    issued_token_type: ID_JAG,
    access_token: signed({ alg: 'RS256', typ: 'oauth-id-jag+jwt', kid: signingJwk.kid }, claims),
    token_type: 'N_A',
    expires_in: 300,
    ...(params.scope ? { scope: params.scope } : {}),
  };
  return undefined;
}, ['subject_token', 'subject_token_type', 'requested_token_type', 'audience', 'resource', 'scope']);

function loginForm(uid, { login = '', error } = {}) {
  return page('Sign in', `${error ? `<p class="error" id="login-error">${htmlEscape(error)}</p>\n` : ''}<form method="post" action="/interaction/${htmlEscape(uid)}/login">
<label>Login <input type="text" name="login" value="${htmlEscape(login)}" autofocus></label>
<label>Password <input type="password" name="password"></label>
<button type="submit">Sign in</button>
</form>`);
}

async function readForm(req) {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
}

function sendHtml(res, status, body) {
  res.writeHead(status, {
    'content-type': 'text/html; charset=utf-8',
    'cache-control': 'no-store',
  });
  res.end(body);
}

async function grantConsent(interaction) {
  const { prompt: { details }, params, session: { accountId } } = interaction;
  let { grantId } = interaction;
  const grant = grantId
    ? await provider.Grant.find(grantId)
    : new provider.Grant({ accountId, clientId: params.client_id });
  if (details.missingOIDCScope) grant.addOIDCScope(details.missingOIDCScope.join(' '));
  if (details.missingOIDCClaims) grant.addOIDCClaims(details.missingOIDCClaims);
  if (details.missingResourceScopes) {
    for (const [indicator, scopes] of Object.entries(details.missingResourceScopes)) {
      grant.addResourceScope(indicator, scopes.join(' '));
    }
  }
  const savedId = await grant.save();
  return grantId ? {} : { grantId: savedId };
}

// Interaction endpoints: GET /interaction/<uid> and POST /interaction/<uid>/login.
async function handleInteraction(req, res, url) {
  const match = /^\/interaction\/([^/]+)(\/login)?$/.exec(url.pathname);
  if (!match) return false;
  const [, uid, loginPath] = match;

  const interaction = await provider.interactionDetails(req, res);
  if (interaction.uid !== uid) throw new Error('interaction uid mismatch');
  const { prompt } = interaction;

  if (req.method === 'GET' && !loginPath) {
    if (prompt.name === 'login') {
      sendHtml(res, 200, loginForm(uid));
    } else if (prompt.name === 'consent') {
      // First-party test client: consent is granted automatically.
      const consent = await grantConsent(interaction);
      await provider.interactionFinished(req, res, { consent }, { mergeWithLastSubmission: true });
    } else {
      sendHtml(res, 400, page('Error', `<p>unsupported prompt ${htmlEscape(prompt.name)}</p>`));
    }
    return true;
  }

  if (req.method === 'POST' && loginPath) {
    if (prompt.name !== 'login') {
      sendHtml(res, 400, page('Error', '<p>interaction is not awaiting login</p>'));
      return true;
    }
    const form = await readForm(req);
    const login = form.get('login') || '';
    const given = form.get('password') || '';
    const ok = Object.hasOwn(accounts, login)
      && given.length === password.length
      && crypto.timingSafeEqual(Buffer.from(given), Buffer.from(password));
    if (!ok) {
      sendHtml(res, 401, loginForm(uid, { login, error: 'Invalid login or password.' }));
      return true;
    }
    await provider.interactionFinished(req, res, { login: { accountId: login } }, {
      mergeWithLastSubmission: false,
    });
    return true;
  }

  sendHtml(res, 405, page('Error', '<p>method not allowed</p>'));
  return true;
}

const providerCallback = provider.callback();

const server = http.createServer(async (req, res) => {
  const url = new URL(req.url, issuer);
  try {
    if (url.pathname.startsWith('/interaction/')) {
      if (await handleInteraction(req, res, url)) return;
    }
    providerCallback(req, res);
  } catch (err) {
    console.error(err);
    if (!res.headersSent) {
      sendHtml(res, err.statusCode || 500, page('Error', `<p>${htmlEscape(err.name)}: ${htmlEscape(err.error_description || err.message)}</p>`));
    } else {
      res.end();
    }
  }
});

provider.on('server_error', (ctx, err) => console.error('server_error', err));

server.listen(port, '127.0.0.1', () => {
  process.stdout.write(`READY ${issuer}\n`);
});

let stopping = false;
function shutdown() {
  if (stopping) return;
  stopping = true;
  server.close(() => process.exit(0));
  server.closeAllConnections();
  setTimeout(() => process.exit(0), 2000).unref();
}
process.on('SIGTERM', shutdown);
process.on('SIGINT', shutdown);
