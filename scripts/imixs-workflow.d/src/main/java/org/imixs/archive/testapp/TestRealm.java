package org.imixs.archive.testapp;

import java.io.IOException;
import java.io.InputStream;
import java.util.Arrays;
import java.util.LinkedHashSet;
import java.util.Properties;
import java.util.Set;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.security.enterprise.credential.Credential;
import jakarta.security.enterprise.credential.UsernamePasswordCredential;
import jakarta.security.enterprise.identitystore.CredentialValidationResult;
import jakarta.security.enterprise.identitystore.IdentityStore;

/**
 * The realm of test users: realm.properties, one line per user,
 * {@code name=password,GROUP,GROUP...}. The groups are the IMIXS-WORKFLOW-* groups
 * that glassfish-web.xml maps to the engine's access-level roles.
 */
@ApplicationScoped
public class TestRealm implements IdentityStore {

    private final Properties users = new Properties();

    public TestRealm() {
        try (InputStream in = TestRealm.class.getResourceAsStream("/realm.properties")) {
            if (in == null) {
                throw new IllegalStateException("realm.properties is missing");
            }
            users.load(in);
        } catch (IOException e) {
            throw new IllegalStateException("realm.properties cannot be read", e);
        }
    }

    @Override
    public CredentialValidationResult validate(Credential credential) {
        if (!(credential instanceof UsernamePasswordCredential)) {
            return CredentialValidationResult.NOT_VALIDATED_RESULT;
        }
        UsernamePasswordCredential given = (UsernamePasswordCredential) credential;
        String entry = users.getProperty(given.getCaller());
        if (entry == null) {
            return CredentialValidationResult.INVALID_RESULT;
        }
        String[] fields = entry.split(",");
        if (!given.compareTo(given.getCaller(), fields[0].trim())) {
            return CredentialValidationResult.INVALID_RESULT;
        }
        Set<String> groups = new LinkedHashSet<>();
        Arrays.stream(fields).skip(1).map(String::trim).forEach(groups::add);
        return new CredentialValidationResult(given.getCaller(), groups);
    }
}
