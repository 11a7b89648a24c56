package org.imixs.archive.testapp;

import java.util.HashSet;
import java.util.Set;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import jakarta.security.enterprise.AuthenticationStatus;
import jakarta.security.enterprise.authentication.mechanism.http.HttpAuthenticationMechanism;
import jakarta.security.enterprise.authentication.mechanism.http.HttpMessageContext;
import jakarta.security.enterprise.credential.UsernamePasswordCredential;
import jakarta.security.enterprise.identitystore.CredentialValidationResult;
import jakarta.security.enterprise.identitystore.IdentityStoreHandler;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import jakarta.servlet.http.HttpSession;

/**
 * The logins a client of the engine's REST API uses, against {@link TestRealm}:
 * <ul>
 * <li>BASIC: an {@code Authorization: Basic} header on every request;</li>
 * <li>FORM: {@code POST .../j_security_check} with {@code j_username} and
 * {@code j_password} opens a session; its {@code JSESSIONID} cookie then
 * authenticates the requests (COOKIE is the same cookie given directly).</li>
 * </ul>
 * A request without valid credentials to a protected path gets 401 and a Basic
 * challenge; a refused form login gets 401 and no session.
 */
@ApplicationScoped
public class LoginMechanism implements HttpAuthenticationMechanism {

    static final String CALLER = "testapp.caller";
    static final String GROUPS = "testapp.groups";

    @Inject
    IdentityStoreHandler realm;

    @Override
    public AuthenticationStatus validateRequest(HttpServletRequest request, HttpServletResponse response,
            HttpMessageContext context) {
        if ("POST".equals(request.getMethod()) && request.getRequestURI().endsWith("/j_security_check")) {
            return formLogin(request, context);
        }
        String header = request.getHeader("Authorization");
        if (header != null && header.regionMatches(true, 0, "Basic ", 0, 6)) {
            return basicLogin(header.substring(6).trim(), context);
        }
        HttpSession session = request.getSession(false);
        if (session != null && session.getAttribute(CALLER) != null) {
            @SuppressWarnings("unchecked")
            Set<String> groups = (Set<String>) session.getAttribute(GROUPS);
            return context.notifyContainerAboutLogin((String) session.getAttribute(CALLER), groups);
        }
        return context.isProtected() ? challenge(context) : context.doNothing();
    }

    private AuthenticationStatus formLogin(HttpServletRequest request, HttpMessageContext context) {
        String user = request.getParameter("j_username");
        String password = request.getParameter("j_password");
        if (user == null || password == null) {
            return context.responseUnauthorized();
        }
        CredentialValidationResult result = realm.validate(new UsernamePasswordCredential(user, password));
        if (result.getStatus() != CredentialValidationResult.Status.VALID) {
            return context.responseUnauthorized();
        }
        HttpSession session = request.getSession(true);
        session.setAttribute(CALLER, result.getCallerPrincipal().getName());
        session.setAttribute(GROUPS, new HashSet<>(result.getCallerGroups()));
        return context.notifyContainerAboutLogin(result);
    }

    private AuthenticationStatus basicLogin(String encoded, HttpMessageContext context) {
        String pair;
        try {
            pair = new String(java.util.Base64.getDecoder().decode(encoded), java.nio.charset.StandardCharsets.UTF_8);
        } catch (IllegalArgumentException e) {
            return challenge(context);
        }
        int colon = pair.indexOf(':');
        if (colon < 0) {
            return challenge(context);
        }
        CredentialValidationResult result = realm
                .validate(new UsernamePasswordCredential(pair.substring(0, colon), pair.substring(colon + 1)));
        if (result.getStatus() != CredentialValidationResult.Status.VALID) {
            return challenge(context);
        }
        return context.notifyContainerAboutLogin(result);
    }

    private AuthenticationStatus challenge(HttpMessageContext context) {
        context.getResponse().setHeader("WWW-Authenticate", "Basic realm=\"imixs-test-workflow\"");
        return context.responseUnauthorized();
    }
}
