package org.imixs.archive.testapp;

import jakarta.ws.rs.ApplicationPath;
import jakarta.ws.rs.core.Application;

/** The engine's REST resources (imixs-workflow-jax-rs, imixs-archive-api) under /api. */
@ApplicationPath("api")
public class RestApplication extends Application {
}
