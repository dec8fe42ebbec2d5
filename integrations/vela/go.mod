module pullcheck/integrations/vela

go 1.19
